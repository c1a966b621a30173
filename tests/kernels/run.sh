#!/bin/bash
# make check-kernels: the tests that touch the kernel, run on Debian's
# stock kernels in an emulated guest (tests/kernels/vm.sh), one after the
# other: Debian 12's own 6.1 and its 6.12 (UBT_KERNELS="6.1 6.12" by
# default).  TAP: one result per case per kernel ("6.1: suite.case"),
# the plan at the end.
#
# What runs is tests/kernels/cases: runtime corpus patterns (enabled
# cases only, as make check), each with the ubt flags it runs with, and
# the scripts that run as they are.  A suite named there whose file
# exists must select cases (a kprobe.test that lost its cases in
# tests/runtime/enabled fails here instead of passing empty).
#
# The guest is 10-50x slower than this machine: each case's TIMEOUT is
# multiplied by UBT_TIMEOUT_SCALE (default 8), a guest gets
# UBT_KERNEL_SECONDS (default 1800) in all.
#
# UBT_KERNELS, UBT_KERNEL_CASES (another cases file) choose less.
# Inside the guest, the script runs itself as
# `run.sh --guest DIR CASES TIMEOUT_SCALE`.
set -u -f

srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${top_builddir:-$PWD}
cases=${UBT_KERNEL_CASES:-$srcdir/tests/kernels/cases}

# The groups of tests/kernels/cases: "FLAGS|PATTERN..." per corpus line,
# "run|SCRIPT" per script line.
groups()
{
	sed -e 's/#.*//' -e 's/[[:space:]]*$//' "$cases" | awk -F'\t+' '
		NF == 0 || $1 == "" { next }
		$1 == "run" { print "run|" $2; next }
		{ print ($2 == "-" ? "" : $2) "|" $1 }'
}

# make check's enabled cases and those only a guest can run
# (tests/kernels/guest-only: a module this machine's kernel lacks)
enabled=$(mktemp /tmp/ubt-kernels-enabled.XXXXXX)
trap 'rm -f "$enabled"' EXIT
cat "$srcdir/tests/runtime/enabled" "$srcdir/tests/kernels/guest-only" \
	>"$enabled"

runner()
{
	UBT=$builddir/ubt top_srcdir=$srcdir top_builddir=$builddir \
		python3 "$srcdir/tests/runtime-runner" \
		--enabled "$enabled" "$@"
}

# The cases of patterns, less those a "!PATTERN" names (slow on an
# emulated machine, not the kernel's business); "-" if none.
selected()
{
	local p name list out=()

	# shellcheck disable=SC2046
	list=$(runner --list $(printf '%s\n' "$@" | grep -v '^!') | cut -f1)
	for name in $list; do
		for p in "$@"; do
			# shellcheck disable=SC2053
			[[ $p == !* && ($name == ${p#!} ||
				${name#*.} == ${p#!}) ]] && continue 2
		done
		out+=("$name")
	done
	[ ${#out[@]} -gt 0 ] || out=(-)
	printf '%s\n' "${out[@]}"
}

# ---- in the guest: each group's TAP into DIR/N.tap ----------------------
if [ "${1:-}" = --guest ]; then
	dir=$2 cases=$3
	export UBT_TIMEOUT_SCALE=$4
	n=0
	groups | while IFS='|' read -r flags what; do
		n=$((n + 1))
		if [ "$flags" = run ]; then
			UBT=$builddir/ubt top_srcdir=$srcdir \
				top_builddir=$builddir timeout -k 10 600 \
				sh "$srcdir/$what" >"$dir/$n.tap" 2>&1
		else
			# shellcheck disable=SC2046,SC2086
			runner --flags "$flags" \
				$(selected $what) \
				>"$dir/$n.tap" 2>&1
		fi
		echo "$?" >"$dir/$n.rc"
	done
	exit 0
fi

# ---- here: boot each kernel, collect its results ------------------------
command -v python3 >/dev/null || { echo "Bail out! python3 is needed"; exit 99; }
[ -x "$builddir/ubt" ] || { echo "Bail out! $builddir/ubt is not built"; exit 99; }
[ -r "$cases" ] || { echo "Bail out! $cases is missing"; exit 99; }

n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok()
{
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n - $1"
	shift
	for l in "$@"; do printf '%s\n' "$l" | sed 's/^/# /'; done
}

# Every pattern of a suite whose file exists must select cases (one
# listing of them all, each pattern matched against it).
mapfile -t pats < <(groups | awk -F'|' '$1 != "run" { print $2 }' |
	tr ' ' '\n' | grep -v -e '^!' -e '^$' | sort -u)
# shellcheck disable=SC2046
listed=$(runner --list "${pats[@]}" | cut -f1)
for pat in "${pats[@]}"; do
	suite=${pat%%.*}
	[ -f "$srcdir/tests/runtime/$suite.test" ] || continue
	cnt=0
	for name in $listed; do
		# shellcheck disable=SC2053
		[[ $name == $pat || ${name#*.} == $pat ]] && cnt=$((cnt + 1))
	done
	if [ "$cnt" -gt 0 ]; then
		ok "$pat selects $cnt enabled case(s)"
	else
		not_ok "$pat selects enabled cases" \
			"tests/runtime/$suite.test exists, but no case" \
			"of it matches $pat in tests/runtime/enabled"
	fi
done

tmp=$(mktemp -d /tmp/ubt-kernels.XXXXXX)
trap 'rm -rf "$tmp" "$enabled"' EXIT
for kv in ${UBT_KERNELS:-6.1 6.12}; do
	mkdir -p "$tmp/$kv"
	start=$(date +%s)
	"$srcdir/tests/kernels/vm.sh" -k "$kv" \
		-t "${UBT_KERNEL_SECONDS:-1800}" -- \
		"$srcdir/tests/kernels/run.sh" --guest "$tmp/$kv" "$cases" \
		"${UBT_TIMEOUT_SCALE:-8}" \
		>"$tmp/$kv.console" 2>&1
	rc=$?
	echo "# $kv: the guest ran for $(($(date +%s) - start)) s (exit status $rc)"
	# a machine without qemu or the kernel skips the guest; under CI it
	# fails (a guest that cannot boot is a failure there)
	if [ "$rc" -eq 99 ] && [ "${CI:-}" != true ]; then
		n=$((n + 1))
		echo "ok $n - $kv: # SKIP the guest cannot boot here:" \
			"$(grep -m1 '^vm.sh:' "$tmp/$kv.console")"
		continue
	fi
	if [ "$rc" -ne 0 ]; then
		not_ok "$kv: the guest ran the tests" \
			"tests/kernels/vm.sh -k $kv exited with $rc:" \
			"$(tail -n 20 "$tmp/$kv.console")"
		continue
	fi
	i=0
	while IFS='|' read -r flags what; do
		i=$((i + 1))
		tag=$kv:
		[ "$flags" != run ] && [ -n "$flags" ] && tag="$kv ($flags):"
		tap=$tmp/$kv/$i.tap
		if [ ! -s "$tap" ]; then
			not_ok "$tag $what: no results"
			continue
		fi
		# each result again, numbered here; its diagnostics after it
		while IFS= read -r line; do
			case $line in
			"ok "*)
				ok "$tag ${line#ok * - }"
				;;
			"not ok "*)
				not_ok "$tag ${line#not ok * - }"
				;;
			"Bail out!"*)
				not_ok "$tag $what: ${line#Bail out! }"
				;;
			"#"*)
				echo "$line"
				;;
			esac
		done <"$tap"
		if [ "$(cat "$tmp/$kv/$i.rc" 2>/dev/null)" = 99 ]; then
			not_ok "$tag $what: harness error (exit status 99)"
		fi
	done < <(groups)
done
echo "1..$n"
[ "$n" -gt 0 ] || exit 99
exit 0
