#!/bin/sh
# make check: a short, deterministic libFuzzer run of the parser over the
# seed corpus (tests/fuzz/corpus/). `make fuzz` fuzzes for longer.
fuzzer=${top_builddir:-.}/tests/fuzz/fuzz-parser
srcdir=${top_srcdir:-$(dirname "$0")/../..}
corpus=$srcdir/tests/fuzz/corpus
echo "1..3"
if [ ! -x "$fuzzer" ]; then
	echo "Bail out! $fuzzer is not built (make tests/fuzz/fuzz-parser)"
	exit 99
fi
work=$(mktemp -d) || exit 99
trap 'rm -rf "$work"' EXIT

report() {
	# $1 test number, $2 name, $3 status of the run
	if [ "$3" -eq 0 ]; then
		echo "ok $1 - $2"
	else
		echo "not ok $1 - $2 (exit $3)"
		tail -n 40 "$work/log" | sed 's/^/#   /'
		failed=1
	fi
}

failed=0
# 1: every seed parses without a sanitizer report
"$fuzzer" -runs=0 -timeout=10 -artifact_prefix="$work/" "$corpus" \
	>"$work/log" 2>&1
report 1 "seed corpus" $?
# 2: mutations of ordinary programs (up to 4 KiB), fixed seed
mkdir "$work/new"
"$fuzzer" -runs=200000 -max_len=4096 -max_total_time=20 -seed=1 \
	-timeout=10 -dict="$srcdir/tests/fuzz/bpftrace.dict" \
	-artifact_prefix="$work/" "$work/new" "$corpus" >"$work/log" 2>&1
report 2 "200000 mutations" $?
# 3: mutations of the long-token seeds (a token of 16 KiB or more once
# corrupted the lexer's heap), inputs up to 128 KiB, fixed seed
mkdir "$work/long" "$work/new-long"
cp "$corpus"/long-*.bt "$work/long/" || exit 99
"$fuzzer" -runs=5000 -max_len=131072 -len_control=0 -max_total_time=20 \
	-seed=1 -timeout=10 -dict="$srcdir/tests/fuzz/bpftrace.dict" \
	-artifact_prefix="$work/" "$work/new-long" "$work/long" \
	>"$work/log" 2>&1
report 3 "5000 mutations of long tokens" $?
exit $failed
