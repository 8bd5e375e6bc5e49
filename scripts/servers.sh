# Sourced by scripts/test and scripts/bench: installs the test tools into .tools/,
# starts dynalite and moto on free ports on 127.0.0.1, exports their endpoints
# and dummy credentials, and stops both servers when the calling script exits.
bash scripts/install-test-tools || { echo "installing test tools failed" >&2; exit 1; }
tools="$root/.tools"
logs="$root/target/test-servers"
mkdir -p "$logs"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT INT TERM

dyn_port=$(free_port)
"$tools/node/node_modules/.bin/dynalite" --host 127.0.0.1 --port "$dyn_port" \
  --createTableMs 0 --deleteTableMs 0 --updateTableMs 0 >"$logs/dynalite.log" 2>&1 &
pids+=($!)
moto_port=$(free_port)
"$tools/venv/bin/moto_server" -H 127.0.0.1 -p "$moto_port" >"$logs/moto.log" 2>&1 &
pids+=($!)

wait_port() {
  for _ in $(seq 1 100); do
    python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$1),0.2)" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "server on port $1 did not start; see $logs" >&2; return 1
}
wait_port "$dyn_port" && wait_port "$moto_port" || exit 1

export DYNALITE_ENDPOINT="http://127.0.0.1:$dyn_port"
export MOTO_ENDPOINT="http://127.0.0.1:$moto_port"
# Dummy credentials and region for the SDK and SAM; nothing here talks to AWS.
export SAM_CLI_TELEMETRY=0
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION=us-east-1 AWS_REGION=us-east-1
echo "dynalite: $DYNALITE_ENDPOINT  moto: $MOTO_ENDPOINT"
