#!/usr/bin/env bash
# GPU checks of libgmux.so, in four parts that tests/gpu/run.sh runs as
# separate checks (each with its own timeout):
#   progs   each program of shim_prog runs natively and under `gmux run`
#           (policies off, demand, proactive) and must print the same RESULT
#   rate    launch rate of empty kernels, native vs `gmux run` off and
#           proactive, best of three interleaved rounds (target: >= 95%);
#           demand and proactive without the managed redirect beside them
#           (diagnostics: where a gap comes from)
#   record  gmux trace / gmux profile -- CMD with CUPTI touched ranges, the
#           trace replayed in gmux sim; CUPTI fault counts in the shim's stats
#   torch   a PyTorch training loop natively and under the three policies,
#           identical losses (skipped where torch is missing)
#   predict the same loop profiled (gmux profile -- CMD), then run proactive
#           under a budget below its footprint (the shim prefetches at every
#           launch; no more managed memory than the GPU has free is asked
#           for) with whole regions and with the template database: identical
#           losses, launches narrowed by templates, bytes prefetched, times
# Results as JSON lines appended to $GMUX_GPU_OUT/shim.jsonl and results.jsonl.
#   tests/gpu/shim_checks.sh BUILD_DIR [progs|rate|record|torch|predict|all]
# Exit 0 all good, 1 a mismatch or failure, 77 no GPU.
set -uo pipefail
build=${1:-build}
part=${2:-all}
prog="$build/tests/gpu/shim_prog"
gmux="$build/tools/gmux/gmux"
out="${GMUX_GPU_OUT:-$build/gpu-out}"
mkdir -p "$out"
json="$out/shim.jsonl"
case "$part" in progs|rate|record|torch|predict|all) ;; *) echo "shim_checks: unknown part '$part'" >&2; exit 2 ;; esac
if [[ ! -x "$prog" || ! -x "$gmux" ]]; then
  echo "shim_checks: $prog or $gmux missing (build with CUDA first)" >&2
  exit 1
fi
# shim_prog links libcuda.so.1 (it is a driver-API program): probe by dlopen first.
probe="$build/tests/gpu/test_gpu_probe"
rc=77
[[ -x "$probe" ]] && { "$probe" >/dev/null 2>&1; rc=$?; }
[[ $rc -eq 0 ]] && { timeout 30 "$prog" launch-rate 10 >/dev/null 2>&1; rc=$?; }
if [[ $rc -eq 77 ]]; then
  echo "shim_checks: no GPU: skipped" >&2
  exit 77
fi
failed=0
emit() { echo "$1" | tee -a "$json" >>"$out/results.jsonl"; echo "$1"; }
want() { [[ $part == all || $part == "$1" ]]; }

if want progs; then
  for check in vecadd-driver vecadd-runtime managed-streams graph graph-cond graph-prefetch vmm; do
    native=$(timeout 30 "$prog" "$check" 2>"$out/shim_${check}_native.err" | grep '^RESULT')
    for policy in off demand proactive; do
      got=$(timeout 30 "$gmux" run --no-daemon --policy "$policy" --stats "$out/shim_${check}_${policy}.stats.json" \
            -- "$prog" "$check" 2>"$out/shim_${check}_${policy}.err" | grep '^RESULT')
      same=false
      [[ -n "$native" && "$got" == "$native" ]] && same=true
      [[ $same == true ]] || { failed=1; tail -5 "$out/shim_${check}_${policy}.err" >&2; }
      emit "{\"check\":\"shim_$check\",\"policy\":\"$policy\",\"native\":\"${native##* }\",\"gmux\":\"${got##* }\",\"identical\":$same}"
    done
  done
  # what libgmux.so walked in the graphs (proactive inspects them): the child
  # graph of `graph`, the IF and WHILE bodies of `graph-cond` (expected 1 and 2)
  walked() { grep -o "\"$2\": *[0-9]*" "$out/shim_$1_proactive.stats.json" 2>/dev/null | grep -o '[0-9]*$'; }
  children=$(walked graph graph_children)
  conds=$(walked graph-cond graph_conditionals)
  unknown=$(walked graph-cond graph_cond_unknown)
  emit "{\"check\":\"shim_graph_walk\",\"graph_children\":${children:-null},\"graph_conditionals\":${conds:-null},\"graph_cond_unknown\":${unknown:-null}}"
  # sharing cudaMalloc'd memory with another process: refused where the memory
  # became managed (demand, proactive), with libgmux.so's warning naming
  # --no-managed; shared natively, with off and with --no-managed
  native=$(timeout 30 "$prog" ipc 2>/dev/null | awk '/^RESULT/ {print $3}')
  for cfg in off demand proactive proactive-unmanaged; do
    policy=${cfg%-unmanaged}; extra=(); want=refused; warned=true
    [[ $cfg == *-unmanaged ]] && extra=(--no-managed)
    [[ $policy == off || $cfg == *-unmanaged ]] && { want=shared; warned=false; }
    got=$(timeout 30 "$gmux" run --no-daemon --policy "$policy" ${extra[@]+"${extra[@]}"} -- "$prog" ipc \
          2>"$out/shim_ipc_${cfg}.err" | awk '/^RESULT/ {print $3}')
    said=false; grep -q -- '--no-managed' "$out/shim_ipc_${cfg}.err" && said=true
    ok=false; [[ $native == shared && $got == "$want" && $said == "$warned" ]] && ok=true
    [[ $ok == true ]] || failed=1
    emit "{\"check\":\"shim_ipc\",\"policy\":\"$policy\",\"managed_redirect\":$([[ $want == refused ]] && echo true || echo false),\"native\":\"$native\",\"gmux\":\"$got\",\"warned\":$said,\"ok\":$ok}"
  done
fi

if want rate; then
  # Rounds of every configuration, the order rotated each round (in the
  # 2026-12-04 runs the same code path ranged 0.885-0.996 with the order
  # fixed, and no allocation went managed: position and machine drift, not
  # the hook). Each round's runs are set against that round's native run; the
  # ratio is the median over rounds (min and max beside it), best/best too.
  # off and proactive are the targets; demand and proactive without the
  # managed redirect (GMUX_SHIM_MANAGED=0) say where a gap comes from;
  # native-managed is the program natively with 64 MiB of managed memory of
  # its own (the driver's cost of managed memory in the context).
  n=${GMUX_SHIM_LAUNCHES:-100000}
  rounds=${GMUX_SHIM_RATE_ROUNDS:-6}
  rate() { timeout 30 "$@" 2>>"$out/shim_rate.err" | awk '/^RATE/ {print $2}'; }
  configs=(native native-managed off demand proactive proactive-unmanaged)
  declare -A per=() # cfg -> the round's launches per second, one per line
  for ((round = 0; round < rounds; round++)); do
    declare -A this=()
    for ((k = 0; k < ${#configs[@]}; k++)); do
      cfg=${configs[$(((k + round) % ${#configs[@]}))]}
      case $cfg in
        native) r=$(rate "$prog" launch-rate "$n") ;;
        native-managed) r=$(rate "$prog" launch-rate-managed "$n") ;;
        *)
          policy=${cfg%-unmanaged}; managed=1
          [[ $cfg == *-unmanaged ]] && managed=0
          r=$(GMUX_SHIM_MANAGED=$managed rate "$gmux" run --no-daemon --policy "$policy" \
            --stats "$out/shim_rate_${cfg}.stats.json" -- "$prog" launch-rate "$n") ;;
      esac
      this[$cfg]=${r:-0}
    done
    for cfg in "${configs[@]}"; do
      per[$cfg]+="${this[$cfg]} ${this[native]}"$'\n'
    done
    unset this
  done
  # stats over rounds of (gmux / native): "median min max best_gmux best_native"
  summary() { printf '%s' "$1" | awk '$1 > 0 && $2 > 0 { r[n++] = $1 / $2; if ($1 > bg) bg = $1; if ($2 > bn) bn = $2 }
    END { if (!n) { print 0, 0, 0, 0, 0; exit }
          for (i = 1; i < n; i++) for (j = i; j > 0 && r[j-1] > r[j]; j--) { t = r[j]; r[j] = r[j-1]; r[j-1] = t }
          m = n % 2 ? r[int(n/2)] : (r[n/2-1] + r[n/2]) / 2
          printf "%.3f %.3f %.3f %.0f %.0f\n", m, r[0], r[n-1], bg, bn }'; }
  for cfg in "${configs[@]:1}"; do
    read -r med lo hi bg bn <<<"$(summary "${per[$cfg]}")"
    [[ $bg != 0 && $bn != 0 ]] || failed=1
    common="\"launches\":$n,\"rounds\":$rounds,\"native_per_s\":$bn,\"gmux_per_s\":$bg,\"ratio\":$med,\"ratio_min\":$lo,\"ratio_max\":$hi"
    if [[ $cfg == native-managed ]]; then
      emit "{\"check\":\"shim_launch_rate_native_managed\",$common}"
      continue
    fi
    ok=$(awk -v x="$med" 'BEGIN { print (x >= 0.95) ? "true" : "false" }')
    target=0.95; [[ $cfg == off || $cfg == proactive ]] || { target=null; ok=null; }
    managed=true; [[ $cfg == *-unmanaged || $cfg == off ]] && managed=false
    # how many allocations (the runtime's own: the program makes none) went managed
    allocs=$(grep -o '"managed_allocs": *[0-9]*' "$out/shim_rate_${cfg}.stats.json" 2>/dev/null |
      grep -o '[0-9]*$' || true)
    emit "{\"check\":\"shim_launch_rate\",\"policy\":\"${cfg%-unmanaged}\",\"managed_redirect\":$managed,$common,\"target\":$target,\"met\":$ok,\"managed_allocs\":${allocs:-null}}"
  done
fi

if want record; then
  # Recording (gmux trace / gmux profile -- CMD): a cudaMalloc program (redirected
  # to managed memory by the demand policy the recording uses) is traced with
  # touched ranges from CUPTI's page faults; the trace must replay in
  # `gmux trace show` and `gmux sim`, the program's result must not change,
  # and the database must be written. Faults and bytes moved reach the stats.
  trace="$out/shim_trace.txt"
  native=$(timeout 30 "$prog" vecadd-runtime 2>/dev/null | grep '^RESULT')
  # gmux trace runs the program twice (a timing pass, then the recording one)
  got=$(timeout 90 "$gmux" trace --format text -o "$trace" -- "$prog" vecadd-runtime \
        2>"$out/shim_trace.err" | grep '^RESULT' | tail -1)
  timed=$(grep '^launch ' "$trace" 2>/dev/null | grep -vc ' ns=0 ')
  launches=$(grep -c '^launch ' "$trace" 2>/dev/null)
  with_ranges=$(grep '^launch ' "$trace" 2>/dev/null | grep -c 'touch=')
  replay=false
  timeout 20 "$gmux" trace show "$trace" >"$out/shim_trace_show.txt" 2>&1 &&
    timeout 30 "$gmux" sim --trace "$trace" --quiet >"$out/shim_trace_sim.txt" 2>&1 && replay=true
  same=false
  [[ -n "$native" && "$got" == "$native" ]] && same=true
  [[ $replay == true && $same == true && ${launches:-0} -gt 0 ]] || { failed=1; tail -5 "$out/shim_trace.err" >&2; }
  emit "{\"check\":\"shim_trace\",\"identical\":$same,\"replays\":$replay,\"launches\":${launches:-0},\"launches_with_ranges\":${with_ranges:-0},\"launches_timed\":${timed:-0}}"
  db="$out/shim_profile.db"
  prof=false
  timeout 60 "$gmux" profile -o "$db" -- "$prog" vecadd-runtime >"$out/shim_profile.txt" 2>&1 &&
    [[ -s "$db" ]] && prof=true
  [[ $prof == true ]] || { failed=1; tail -5 "$out/shim_profile.txt" >&2; }
  emit "{\"check\":\"shim_profile\",\"database_written\":$prof}"
  GMUX_SHIM_CUPTI=1 timeout 30 "$gmux" run --no-daemon --policy demand --stats "$out/shim_cupti.stats.json" \
    -- "$prog" vecadd-runtime >/dev/null 2>"$out/shim_cupti.err"
  faults=$(grep -o '"um_faults":[0-9]*' "$out/shim_cupti.stats.json" 2>/dev/null | cut -d: -f2)
  htod=$(grep -o '"um_bytes_htod":[0-9]*' "$out/shim_cupti.stats.json" 2>/dev/null | cut -d: -f2)
  emit "{\"check\":\"shim_cupti_stats\",\"um_faults\":${faults:-0},\"um_bytes_htod\":${htod:-0}}"
fi

if want torch; then
  torch_py="$(dirname "$0")/shim_torch.py"
  t0=$(date +%s.%N)
  torch_out=$(timeout 60 python3 "$torch_py" 2>"$out/shim_torch_native.err")
  rc=$?
  t_native=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}')
  native=$(grep '^RESULT' <<<"$torch_out")
  if [[ $rc -eq 77 ]]; then
    emit '{"check":"shim_torch_train","skipped":"no torch or no GPU"}'
  else
    [[ -n "$native" ]] || { failed=1; tail -5 "$out/shim_torch_native.err" >&2; }
    for policy in off demand proactive; do
      t0=$(date +%s.%N)
      got=$(timeout 60 "$gmux" run --no-daemon --policy "$policy" --stats "$out/shim_torch_${policy}.stats.json" \
            -- python3 "$torch_py" 2>"$out/shim_torch_${policy}.err" | grep '^RESULT')
      dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}')
      same=false
      [[ -n "$native" && "$got" == "$native" ]] && same=true
      [[ $same == true ]] || { failed=1; tail -8 "$out/shim_torch_${policy}.err" >&2; }
      emit "{\"check\":\"shim_torch_train\",\"policy\":\"$policy\",\"identical\":$same,\"native_s\":$t_native,\"gmux_s\":$dt}"
    done
  fi
fi
if want predict; then
  torch_py="$(dirname "$0")/shim_torch.py"
  native=$(timeout 60 python3 "$torch_py" 2>"$out/shim_predict_native.err" | grep '^RESULT')
  if [[ -z "$native" ]]; then
    emit '{"check":"shim_predict","skipped":"no torch or no GPU"}'
  else
    db="$out/shim_torch.db"
    timeout 120 "$gmux" profile -o "$db" -- python3 "$torch_py" >"$out/shim_predict_profile.txt" 2>&1
    [[ -s "$db" ]] || { failed=1; tail -5 "$out/shim_predict_profile.txt" >&2; }
    templated=$(grep -c ' T[123] ' "$db" 2>/dev/null)
    budget=${GMUX_PREDICT_BUDGET:-8M}
    counter() { local v; v=$(grep -o "\"$1\":[0-9]*" "$2" 2>/dev/null | cut -d: -f2); echo "${v:-0}"; }
    for how in whole templates; do
      args=(run --no-daemon --policy proactive --budget "$budget" --stats "$out/shim_predict_$how.stats.json")
      [[ $how == templates ]] && args+=(--templates "$db")
      t0=$(date +%s.%N)
      got=$(timeout 60 "$gmux" "${args[@]}" -- python3 "$torch_py" 2>"$out/shim_predict_$how.err" | grep '^RESULT')
      dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}')
      same=false
      [[ "$got" == "$native" ]] && same=true
      st="$out/shim_predict_$how.stats.json"
      narrowed=$(counter template_launches "$st")
      [[ $same == true ]] || { failed=1; tail -8 "$out/shim_predict_$how.err" >&2; }
      [[ $how == whole || $narrowed -gt 0 ]] || failed=1
      emit "{\"check\":\"shim_predict\",\"how\":\"$how\",\"budget\":\"$budget\",\"identical\":$same,\"templated_args\":${templated:-0},\"launches\":$(counter launches "$st"),\"predicted_launches\":$(counter predicted_launches "$st"),\"template_launches\":$narrowed,\"prefetch_bytes\":$(counter prefetch_bytes "$st"),\"prefetches\":$(counter prefetches "$st"),\"gmux_s\":$dt}"
    done
  fi
fi
exit $failed
