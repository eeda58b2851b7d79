# bench-job-lib.sh: what the benchmark jobs of bench-slurm.sh and
# bench-queue-nodes.sh share, sourced inside the job.
now_us() { echo $(($(date +%s%N) / 1000)); }
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
once() { # name command…: one wall time in µs
  local s e
  s=$(now_us)
  "${@:2}" >/dev/null 2>&1
  e=$(now_us)
  echo "$1 $((e - s))"
}
