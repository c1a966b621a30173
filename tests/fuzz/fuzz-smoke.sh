#!/bin/sh
# make check: a short, deterministic libFuzzer run of the parser over the
# seed corpus (tests/fuzz/corpus/). `make fuzz` fuzzes for longer.
fuzzer=${top_builddir:-.}/tests/fuzz/fuzz-parser
srcdir=${top_srcdir:-$(dirname "$0")/../..}
corpus=$srcdir/tests/fuzz/corpus
echo "1..2"
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
# 2: a few thousand mutations, fixed seed
mkdir "$work/new"
"$fuzzer" -runs=200000 -max_total_time=20 -seed=1 -timeout=10 \
	-dict="$srcdir/tests/fuzz/bpftrace.dict" \
	-artifact_prefix="$work/" "$work/new" "$corpus" >"$work/log" 2>&1
report 2 "200000 mutations" $?
exit $failed
