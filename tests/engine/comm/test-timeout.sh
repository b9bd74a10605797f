#!/bin/sh
# test-timeout.sh MPIEXEC COMM-FAULT — time-outs, as TAP.
#
# late: rank 1 of 3 joins an all-reduce 6 s late, past the 2 s time-out.
# The job must fail (non-zero), soon (the survivors give up after 2 s and
# a grace of 1 s for the status queries; 15 s allows for mpirun's start
# and an oversubscribed machine), and the survivors' error must name rank 1.
# Then the same late rank under the other algorithms, and a receive whose
# sender never sends.
# kill: rank 1 dies by SIGKILL before that all-reduce; the job must fail
# and not hang (timeout 60 is the guard; it should take seconds).
mpiexec=$1
prog=$2
err=$(mktemp)
trap 'rm -f "$err"' EXIT
n=0
fails=0
check () {  # check OK DESCRIPTION
  n=$((n + 1))
  if [ "$1" = 1 ]; then
    echo "ok $n - $2"
  else
    echo "not ok $n - $2"
    fails=$((fails + 1))
  fi
}
echo "1..17"

t0=$(date +%s)
timeout 60 "$mpiexec" -np 3 "$prog" late >/dev/null 2>"$err"
rc=$?
t1=$(date +%s)
[ $rc -ne 0 ]; check $((1 - $?)) "late rank: the job fails (status $rc)"
[ $rc -ne 124 ] && [ $((t1 - t0)) -le 15 ]; check $((1 - $?)) "late rank: it ends within 15 s ($((t1 - t0)) s)"
grep -q "rank 1 never arrived" "$err"; check $((1 - $?)) "late rank: the survivors say 'rank 1 never arrived'"
# Both survivors say it, each naming itself.
grep -q "^rank 0: .*rank 1 never arrived at collective #3 (allreduce ring, 16 bytes, bucket 0) within the 2 s time-out; rank 1 is alive: it finished #2" "$err" \
  && grep -q "^rank 2: .*rank 1 never arrived" "$err"
check $((1 - $?)) "late rank: ranks 0 and 2 name collective #3 and say rank 1 is alive"
if [ $fails -ne 0 ]; then
  sed 's/^/# /' "$err"
fi

# The same diagnosis whichever algorithm waits.
for algo in mpi tree ps hier; do
  f0=$fails
  timeout 60 "$mpiexec" -np 3 "$prog" late $algo >/dev/null 2>"$err"
  rc=$?
  [ $rc -ne 0 ] && [ $rc -ne 124 ]; check $((1 - $?)) "late rank, $algo: the job fails (status $rc)"
  grep -q "^rank 0: rank 1 never arrived at collective #3 (allreduce $algo," "$err"
  check $((1 - $?)) "late rank, $algo: rank 0 names rank 1 and collective #3"
  if [ $fails -ne $f0 ]; then
    sed 's/^/# /' "$err"
  fi
done

# A message that never comes: the receiver names its sender.
f0=$fails
timeout 60 "$mpiexec" -np 3 "$prog" silent >/dev/null 2>"$err"
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ]; check $((1 - $?)) "silent sender: the job fails (status $rc)"
grep -q "^rank 0: rank 1 never sent message 1 (8 bytes, activations) within the 2 s time-out: it is alive" "$err"
check $((1 - $?)) "silent sender: rank 0 says rank 1 never sent message 1 and is alive"
if [ $fails -ne $f0 ]; then
  sed 's/^/# /' "$err"
fi

f0=$fails
t0=$(date +%s)
timeout 60 "$mpiexec" -np 3 "$prog" kill >/dev/null 2>"$err"
rc=$?
t1=$(date +%s)
[ $rc -ne 0 ]; check $((1 - $?)) "killed rank: the job fails (status $rc)"
[ $rc -ne 124 ]; check $((1 - $?)) "killed rank: the job does not hang ($((t1 - t0)) s)"
[ $((t1 - t0)) -le 15 ]; check $((1 - $?)) "killed rank: it ends within 15 s"
if [ $fails -ne $f0 ]; then
  sed 's/^/# /' "$err"
fi
[ $fails -eq 0 ]
