# Switchboard. `make run` opens the app; `make test` runs every test, end-to-end included.
# Both install what is missing first (scripts/install-deps.sh: idempotent, skips what is present).

SHELL := /bin/bash
CARGO ?= cargo
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: run test deps test-deps build e2e screenshots bundle test-packages lint clean test-real-llm eval-tools fuzz bench-memory bench-window

run: deps
	$(CARGO) build
	./target/debug/switchboard

deps:
	scripts/install-deps.sh

test-deps:
	scripts/install-deps.sh --test

build: deps
	$(CARGO) build

# Unit and integration tests (the engine headless: src-tauri/engine/tests/it; the app's CLI and the
# conformance suite: tests/app), the packages (tests/packages), then the E2E tests in the real window
# under Xvfb (tests/e2e).
# A plain `cargo build` first: E2E drives that binary.
test: test-deps
	$(CARGO) build
	$(CARGO) test --workspace
	$(MAKE) test-packages
	$(MAKE) e2e

# Opt-in, slow, not in `make test`: a real model (Gemma 3 270M on llama.cpp's llama-server, built here)
# through the OpenAI-compatible provider, one turn that reaches the built-in calculator.
test-real-llm: test-deps
	$(CARGO) build
	set -a && eval "$$(scripts/real-llm.sh)" && set +a && $(CARGO) test -p switchboard-engine --test it real_llm -- --ignored --nocapture

# Opt-in, slow, not in `make test`: the tool-use eval (src-tauri/engine/tests/it/eval_tools.rs) against a
# real model, with each of Switchboard's aids for small models switched off in turn. MODEL=… URL=…
# PROVIDER=ollama|openai; without URL, llama-server and Gemma 3 270M from scripts/real-llm.sh.
eval-tools: test-deps
	$(CARGO) build -p switchboard-engine
	set -a && if [ -z "$(URL)" ]; then eval "$$(scripts/real-llm.sh)"; fi && set +a && \
	  EVAL_URL="$(URL)" EVAL_MODEL="$(MODEL)" EVAL_PROVIDER="$(PROVIDER)" \
	  $(CARGO) test -p switchboard-engine --test it eval_tools -- --ignored --nocapture

# Not in `make test`: each cargo-fuzz target in fuzz/ (the line splitter, the SSE parser, the
# tool-call recovery, the template-derived parser, config import, conversation import) for FUZZ_SECONDS. On stable Rust, with
# libFuzzer's coverage but no sanitizer (AddressSanitizer needs nightly; the code fuzzed here is
# safe Rust). A crash stops it and leaves the input in fuzz/artifacts/TARGET/: turn it into a
# regression test in the engine's tests.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS = line_splitter sse tool_call_recovery learned_markup config_import conversation_import
fuzz:
	command -v cargo-fuzz >/dev/null || $(CARGO) install cargo-fuzz --locked
	cd fuzz && for t in $(FUZZ_TARGETS); do \
	  mkdir -p corpus/$$t seeds/$$t && \
	  $(CARGO) fuzz run --sanitizer none $$t corpus/$$t seeds/$$t -- \
	    -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 || exit 1; \
	done

e2e:
	$(CARGO) build
	xvfb-run -a -s "-screen 0 1280x800x24" $(CARGO) test --test e2e -- --ignored --test-threads=1 --skip bench::

# Memory of the real window at idle (release build, fresh profile, no LLM, built-in servers on): RSS and
# PSS per process and the total. A benchmark: it prints, it does not pass or fail.
bench-memory: test-deps
	$(CARGO) build --release -p switchboard -p switchboard-engine --bin switchboard --bin switchboard-mcp
	xvfb-run -a -s "-screen 0 1280x800x24" python3 scripts/bench-memory.py target/release/switchboard

# The window's first paint of a 10,000-message conversation, from the click in the list, and the app's
# memory idle and with that conversation open (release build, through WebDriver under Xvfb). Benchmarks:
# they print, they do not pass or fail on time or size.
bench-window: test-deps
	xvfb-run -a -s "-screen 0 1280x800x24" $(CARGO) test --release --test e2e -- --ignored --test-threads=1 \
	  --nocapture bench::

# The E2E run writes its screenshots under target/screenshots (a test run leaves the tree clean);
# this copies them over the ones the README shows.
screenshots: e2e
	mkdir -p docs/screenshots
	cp target/screenshots/*.png docs/screenshots/

# The packages (target/release/bundle/): the .deb and the .rpm by Tauri's bundler (the npm Tauri CLI),
# the AppImage by scripts/appimage.sh from the .deb's files (Tauri's AppImage step downloads its tools
# from GitHub; see the script). The built-in servers' small binary goes in next to the app (an
# external binary named the way Tauri wants: NAME-<target triple>). tests/packages/check.sh checks them.
TRIPLE = $(shell rustc -vV | sed -n 's/^host: //p')
EXTERNAL_BIN = --config '{"bundle":{"externalBin":["target/external/switchboard-mcp"]}}'
# The three packages of target/$(1) (release or debug), the .deb and .rpm by `tauri $(2)`.
define pack
	mkdir -p target/external
	cp target/$(1)/switchboard-mcp target/external/switchboard-mcp-$(TRIPLE)
	rm -rf target/$(1)/bundle/deb target/$(1)/bundle/rpm target/$(1)/bundle/appimage
	npx --no-install tauri $(2) --bundles deb,rpm $(EXTERNAL_BIN)
	scripts/appimage.sh target/$(1)
endef
bundle: deps
	npm ci --no-audit --no-fund --loglevel=error
	$(CARGO) build --release -p switchboard-engine --bin switchboard-mcp
	$(call pack,release,build)

# The same three packages from the debug build (seconds, no release build), and their checks: what
# make test runs. The release ones differ only in the binaries' build profile.
test-packages: test-deps
	$(CARGO) build
	$(call pack,debug,bundle --debug)
	tests/packages/check.sh target/debug

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

clean:
	$(CARGO) clean
