#!/usr/bin/env bash
# Installs what Switchboard needs to build, run and test. Idempotent: skips what is present.
#   scripts/install-deps.sh          system packages to build and run the app (and to pack it: mksquashfs)
#   scripts/install-deps.sh --test   also E2E tooling (Xvfb, WebKitWebDriver, tauri-driver), the npm test servers,
#                                    uv (uvx),
#                                    and a Secret Service to test secrets against (gnome-keyring, run by the
#                                    tests in their own dbus-run-session; secret-tool to look inside it), and
#                                    xdg-open (the E2E sign-in opens its page through it, as on a desktop), and a
#                                    desktop notification server (dunst; dbus-monitor watches what the app sends it),
#                                    and axe-core (the accessibility audit injects it into the window), and the
#                                    Tauri CLI and rpm (make test packs the debug build and reads the packages), and
#                                    llama.cpp's chat templates (the markup crate's test over every one of them)
set -euo pipefail
export PATH="$HOME/.cargo/bin:$PATH"
cd "$(dirname "$0")/.."

want_test=0
[ "${1:-}" = "--test" ] && want_test=1

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

pkgs=(libwebkit2gtk-4.1-dev libgtk-3-dev libsoup-3.0-dev libjavascriptcoregtk-4.1-dev librsvg2-dev
      libayatana-appindicator3-dev libxdo-dev libssl-dev pkg-config build-essential curl file
      squashfs-tools)
if [ $want_test = 1 ]; then
  pkgs+=(xvfb xauth webkit2gtk-driver xdotool python3 gnome-keyring libsecret-tools dbus-daemon xdg-utils dunst dbus-bin
         rpm)
  command -v node >/dev/null 2>&1 || pkgs+=(nodejs npm)
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ $want_test = 1 ]; then
  if ! command -v tauri-driver >/dev/null 2>&1; then
    echo "install-deps: installing tauri-driver"
    cargo install tauri-driver --version "^2" --locked --quiet
  fi
  # The npm packages of folder $1, pinned by its package-lock.json; again whenever the lock file
  # changed since the last install ($2: what they are, said while installing).
  npm_pinned() {
    if ! cmp -s "$1/package-lock.json" "$1/node_modules/.installed-lock.json" 2>/dev/null; then
      echo "install-deps: installing $2"
      (cd "$1" && { npm ci --no-audit --no-fund --loglevel=error || npm install --no-audit --no-fund --loglevel=error; } \
        && cp package-lock.json node_modules/.installed-lock.json)
    fi
  }
  # The Tauri CLI: make test bundles the debug build and checks the packages (tests/packages).
  npm_pinned . "the Tauri CLI"
  # Real MCP servers used by the tests (npm).
  npm_pinned tests/servers "npm test servers"
  # What the E2E tests inject into the window (axe-core).
  npm_pinned tests/e2e "the E2E tests' npm packages (axe-core)"
  # The official MCP client conformance suite and Node 22 for it, pinned by tests/conformance/package-lock.json
  # (again when that changes: a new version of the suite).
  npm_pinned tests/conformance "the MCP conformance suite"
  # Real MCP servers used by the tests (PyPI), pinned by tests/servers/requirements.txt, in their own venv.
  if ! cmp -s tests/servers/requirements.txt tests/servers/.venv/installed.txt 2>/dev/null; then
    echo "install-deps: installing PyPI test servers"
    python3 -m venv tests/servers/.venv
    tests/servers/.venv/bin/pip install --quiet --disable-pip-version-check -r tests/servers/requirements.txt
    cp tests/servers/requirements.txt tests/servers/.venv/installed.txt
  fi
  # uv and uvx on their own, as a user who runs PyPI servers has them (no Python beside them),
  # pinned by tests/servers/uv.txt: the sandbox's fetch for a uvx server is tested with them.
  if ! cmp -s tests/servers/uv.txt tests/servers/.uv/installed.txt 2>/dev/null; then
    echo "install-deps: installing uv"
    rm -rf tests/servers/.uv
    tests/servers/.venv/bin/pip install --quiet --disable-pip-version-check --target tests/servers/.uv -r tests/servers/uv.txt
    cp tests/servers/uv.txt tests/servers/.uv/installed.txt
  fi
fi
if [ $want_test = 1 ]; then
  # llama.cpp's chat templates (models/templates/*.jinja, with llama.cpp's LICENSE), from the PyPI
  # sdist of llama-cpp-python that vendors llama.cpp (PyPI is reachable where GitHub is not), pinned by
  # version and SHA-256; only the templates and the licence are kept, in .tools/templates (gitignored).
  LCP_VERSION=0.3.36
  LCP_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
  tdir=.tools/templates
  if [ "$(cat "$tdir/.version" 2>/dev/null)" != "$LCP_VERSION" ]; then
    echo "install-deps: unpacking llama.cpp's chat templates (llama-cpp-python $LCP_VERSION sdist)"
    tmp=$(mktemp -d)
    python3 -m pip download --quiet --disable-pip-version-check --no-deps --no-binary=llama-cpp-python \
      "llama-cpp-python==$LCP_VERSION" -d "$tmp"
    echo "$LCP_SHA256  $tmp/llama_cpp_python-$LCP_VERSION.tar.gz" | sha256sum -c --quiet
    rm -rf "$tdir" && mkdir -p "$tdir"
    tar -xzf "$tmp/llama_cpp_python-$LCP_VERSION.tar.gz" -C "$tdir" --strip-components=3 \
      "llama_cpp_python-$LCP_VERSION/vendor/llama.cpp/models/templates" \
      "llama_cpp_python-$LCP_VERSION/vendor/llama.cpp/LICENSE"
    rm -rf "$tmp"
    echo "$LCP_VERSION" > "$tdir/.version"
  fi
fi
echo "install-deps: ok"
