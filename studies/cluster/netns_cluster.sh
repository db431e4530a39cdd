#!/usr/bin/env bash
# A Ray cluster on one machine that behaves like three: a head and two workers, each in its own
# network namespace with its own IP (iproute2 + a bridge; needs root), each `ray start` with its
# own --temp-dir and its own home (its own ~/.ray), started with the commands of
# docs/clusters.md: `ray get-auth-token --generate > /dev/null` and `ray start --head --port 6379` on the
# head, its token copied to each other node, `RAY_AUTH_MODE=token ray start --address HEAD:6379`
# on each worker. It runs one grid (stragglers), one search (search, 3 draws) and one FLoCoRA
# study (flocora_quantization) at --preset smoke from a driver on the head, then the faults
# that a user meets on a cluster, each with its exit code; a summary line per step goes to
# $WORK/summary.txt. Everything it started is stopped by PID at the end (never
# `ray stop`: that would end every Ray on the machine).
#
#   sudo bash studies/cluster/netns_cluster.sh            # WORK=/tmp/fcl-netns-XXXX
#   sudo WORK=/tmp/mine STEPS="grid faults" bash studies/cluster/netns_cluster.sh
#
# Steps (STEPS, default all): grid search flocora faults storage; also: compare (the grid run
# locally, rows compared with the cluster's), loss (both workers stopped mid-study, then back
# and --resume; needs HEAD_CPUS=0, the usual lab head), client (a driver on Ray Client from a
# machine that is not a node and cannot see --storage; needs `ray[client]`), job (`ray job
# submit` from a machine that is not a node, as docs/clusters.md says; needs `ray[default]`; PY
# then names a Python that has them; client and job in separate runs: with the dashboard on,
# the head's Ray Client server failed to start its per-client server in the namespaces).
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PY:-$REPO/.venv/bin/python}
RAY=$(dirname "$PY")/ray
WORK=${WORK:-$(mktemp -d /tmp/fcl-netns-XXXX)}
STEPS=${STEPS:-grid search flocora faults storage}
NET=10.77.0 BR=fclbr0 PORT=6379 HEAD_CPUS=${HEAD_CPUS:-1}
HEAD=$NET.10
mkdir -p "$WORK"
RESULTS=$WORK/results STORAGE=$WORK/tune      # one filesystem: every namespace shares it
SUMMARY=$WORK/summary.txt
: >"$SUMMARY"

ns() { ip netns exec "fcl-$1" env HOME="$WORK/home-$1" "${@:2}"; }   # its own machine

net_up() (                 # a bridge in this namespace, a veth into each node's namespace
  set -e
  ip link add $BR type bridge && ip addr add $NET.1/24 dev $BR && ip link set $BR up
  local i=10
  for n in head w1 w2 drv; do
    mkdir -p "$WORK/home-$n"
    ip netns add "fcl-$n"
    ip link add "v-$n" type veth peer name eth0 netns "fcl-$n"
    ip link set "v-$n" master $BR up
    ns "$n" ip addr add "$NET.$i/24" dev eth0
    ns "$n" ip link set eth0 up
    ns "$n" ip link set lo up
    i=$((i + 1))
  done
)

net_down() {
  for n in head w1 w2 drv; do ip netns del "fcl-$n" 2>/dev/null; ip link del "v-$n" 2>/dev/null; done
  ip link del $BR 2>/dev/null
  return 0
}

start_node() {             # start_node NAME IP [wrapper...]: ray start in that namespace
  local name=$1 ip=$2; shift 2
  local cpus=1
  [ "$name" = head ] && cpus=$HEAD_CPUS
  local args=(--node-ip-address "$ip" --num-cpus "$cpus" --temp-dir "$WORK/ray-$name"
              --disable-usage-stats)
  if [ "$name" = head ]; then
    case " $STEPS " in *" client "*) args+=(--ray-client-server-port 10001) ;; esac # ray[client]
    case " $STEPS " in                                                              # ray[default]
      *" job "*) args+=(--dashboard-host 0.0.0.0) ;;
      *) args+=(--include-dashboard false) ;;
    esac
  fi
  # a job's `python` is the one of this venv
  local run=(env RAY_ADDRESS= PATH="$(dirname "$PY"):$PATH")
  if [ "$name" = head ]; then     # Ray 2.60 turns token auth on only where a token exists
    ns head "${run[@]}" "$RAY" get-auth-token --generate > /dev/null 2>"$WORK/token-head.log" &&
    ns head "$@" "${run[@]}" "$RAY" start --head --port $PORT "${args[@]}" \
      >"$WORK/start-head.log" 2>&1 &&
    for n in w1 w2 drv; do     # the head's token, copied to each other machine
      mkdir -p "$WORK/home-$n/.ray" && cp "$WORK/home-head/.ray/auth_token" "$WORK/home-$n/.ray/"
    done
  else                            # the CLI sends the token only with RAY_AUTH_MODE=token
    ns "$name" "$@" "${run[@]}" RAY_AUTH_MODE=token "$RAY" start --address $HEAD:$PORT \
      "${args[@]}" >"$WORK/start-$name.log" 2>&1
  fi
}

stop_node() {              # every process started with that node's temp dir, by PID
  local pids mine="$WORK/ray-$1"
  # the head's Ray Client server does not name the temp dir
  [ "$1" = head ] && mine="$mine|ray.util.client.server --address=$HEAD:$PORT"
  pids=$(pgrep -f -- "$mine" || true)
  [ -n "$pids" ] && kill $pids 2>/dev/null
  sleep 2
  pids=$(pgrep -f -- "$mine" || true)
  [ -n "$pids" ] && kill -9 $pids 2>/dev/null
  return 0
}

cleanup() {
  for n in w2 w1 head; do stop_node "$n"; done
  net_down
}
trap cleanup EXIT

step() {                   # step LABEL CMD...: run CMD, log it, one summary line
  local label=$1; shift
  local t0=$SECONDS
  "$@" >"$WORK/$label.out" 2>"$WORK/$label.err"
  local rc=$?
  local last
  last=$(grep -E "^(error|failed|stopped|[0-9]+ trials finished)" "$WORK/$label.err" \
         "$WORK/$label.out" 2>/dev/null | head -3 | sed 's/^[^:]*://' | tr '\n' ' ')
  echo "$label: exit $rc in $((SECONDS - t0)) s; stderr $(wc -l <"$WORK/$label.err") lines; $last" \
    | tee -a "$SUMMARY"
}

driver() {                 # a study from the driver on the head
  ns head env RAY_ADDRESS= PYTHONPATH="$REPO" "$PY" "$@" --preset smoke --seeds 1 \
    --address "$HEAD:$PORT" --results "$RESULTS" --storage "$STORAGE"
}

rows() { rows_at "$RESULTS" "$1"; }

rows_at() {                # rows_at RESULTS [STUDY]: trials' rows by status, the nodes used
  "$PY" - "$1/${2:-stragglers}/trials.parquet" <<'EOF' | tee -a "$SUMMARY"
import sys, pandas as pd
t = pd.read_parquet(sys.argv[1])
print(f"  {sys.argv[1].split('/')[-2]}: {len(t)} rows {t['status'].value_counts().to_dict()}, "
      f"on nodes {t['node_ip'].value_counts().to_dict()}, fcl {sorted(set(t['fcl_version']))} "
      f"at {sorted(set(t['fcl_git']))}")
EOF
}

same_rows() {              # same_rows A B: trials, rounds, tasks of two exports, timing aside
  "$PY" - "$1" "$2" <<'EOF' | tee -a "$SUMMARY"
import sys, pandas as pd
skip = {"wall_s", "samples_per_s", "tune_trial_id", "tune_trial_dir", "hostname", "node_ip",
        "fcl_git"}     # the commit: others may commit between two runs
out = []
for name in ("trials", "rounds", "tasks"):
    a, b = (pd.read_parquet(f"{d}/{name}.parquet") for d in sys.argv[1:])
    cols = [c for c in a.columns if c not in skip]
    same = len(a) == len(b) and a[cols].reset_index(drop=True).equals(b[cols].reset_index(drop=True))
    out.append(f"{name} {len(a)} vs {len(b)} rows, {'equal' if same else 'DIFFERENT'}")
print("  " + "; ".join(out) + f"  ({sys.argv[1]} vs {sys.argv[2]})")
EOF
}

lose_workers() {           # the grid with both workers stopped after 40 s, then resumed
  driver studies/stragglers.py --fresh >"$WORK/loss.out" 2>"$WORK/loss.err" &
  local pid=$! t0=$SECONDS
  sleep 40; stop_node w1; stop_node w2
  wait $pid
  echo "loss: exit $? in $((SECONDS - t0)) s; $(grep -E '^(error|stopped)' "$WORK/loss.err" \
    | head -1)" | tee -a "$SUMMARY"
  start_node w1 $NET.11 && start_node w2 $NET.12
  step loss-resume driver studies/stragglers.py --resume
  rows stragglers
}

cd "$REPO" || exit 1
net_down; net_up || { echo "could not build the namespaces"; exit 1; }
start_node head $HEAD || { cat "$WORK/start-head.log"; exit 1; }
start_node w1 $NET.11 && start_node w2 $NET.12 || { cat "$WORK"/start-w*.log; exit 1; }
sleep 3                    # the workers registered with the head before the first driver
echo "cluster: head $HEAD ($HEAD_CPUS CPUs), workers $NET.11 $NET.12 (1 CPU each); work in" \
  "$WORK" | tee -a "$SUMMARY"

for s in $STEPS; do
  case $s in
    grid)    step grid driver studies/stragglers.py; rows stragglers ;;
    search)  step search driver studies/search.py --num-samples 3; rows search ;;
    flocora) step flocora driver studies/flocora_quantization.py; rows flocora_quantization ;;
    compare)
      step local env RAY_ADDRESS= "$PY" studies/stragglers.py --preset smoke --seeds 1 \
        --results "$WORK/local"
      same_rows "$WORK/local/stragglers" "$RESULTS/stragglers" ;;
    loss)    lose_workers; same_rows "$WORK/local/stragglers" "$RESULTS/stragglers" ;;
    client)                # its own mount namespace: --storage there is an empty tmpfs
      mkdir -p "$STORAGE"
      step client ns drv unshare --pid --fork --mount-proc --mount --propagation private \
        sh -c "mount -t tmpfs none '$STORAGE' && exec \"\$@\"" sh env RAY_ADDRESS= \
        PYTHONPATH="$REPO" "$PY" studies/stragglers.py --preset smoke --seeds 1 \
        --address "ray://$HEAD:10001" --results "$WORK/client-results" \
        --storage "$STORAGE/client"
      rows_at "$WORK/client-results" ;;
    job)                   # from the driver's namespace: a machine that is not a node
      step job ns drv env RAY_ADDRESS= RAY_AUTH_MODE=token "$RAY" job submit \
      --address http://$HEAD:8265 --working-dir . \
      --runtime-env-json "{\"env_vars\": {\"FCL_GIT\": \"$(git describe --always --dirty)\"}}" -- \
      python studies/stragglers.py --preset smoke --seeds 1 --results "$WORK/job-results"
      rows_at "$WORK/job-results"
      step job-without-auth-mode ns drv env RAY_ADDRESS= "$RAY" job submit \
        --address http://$HEAD:8265 -- python -c pass ;;
    faults)
      step too-large driver studies/stragglers.py --cpus-per-trial 2 --fresh
      step not-a-node ns drv unshare --pid --fork --mount-proc env RAY_ADDRESS= \
        PYTHONPATH="$REPO" "$PY" studies/stragglers.py --preset smoke \
        --address "$HEAD:$PORT" --results "$WORK/drv-results"
      step token-env-unset driver studies/stragglers.py --dry-run ;;
    storage)               # w2 sees its own empty tmpfs where the others see $STORAGE
      stop_node w2; mkdir -p "$STORAGE"
      start_node w2 $NET.12 unshare --mount --propagation private sh -c \
        "mount -t tmpfs none '$STORAGE' && exec \"\$@\"" sh
      sleep 3
      step unshared-storage driver studies/stragglers.py --fresh ;;
  esac
done
echo "summary in $SUMMARY"
