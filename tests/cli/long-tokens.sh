#!/bin/sh
# Long tokens, deep nesting and odd bytes: each program compiles or gets a
# diagnostic, never a crash. A token of 16 KiB or more once overflowed the
# lexer's state buffer ("double free or corruption", exit 134).
#
# Each token kind is tried at 16 KiB, 64 KiB and 1 MiB, from a script file
# (--dry-run: lexer, parser, sema and codegen) and, below the kernel's
# 128 KiB limit on one argument, with -e.

. "${top_srcdir:?}/tests/cli/tap.sh"

# repeat N STRING: STRING N times
repeat()
{
	awk -v n="$1" -v s="$2" 'BEGIN {
		r = s
		while (length(r) < n * length(s))
			r = r r
		printf "%s", substr(r, 1, n * length(s))
	}'
}

# check NAME STATUS PATTERN -- UBT-ARGS...: run ubt; its exit status must
# be STATUS and, when PATTERN is not empty, the first line of its stderr
# must contain PATTERN (a fixed string). Each takes well under a second;
# one that hangs is stopped after 120 s (exit status 124).
check()
{
	name=$1 status=$2 pattern=$3
	shift 4
	timeout -k 5 120 "$UBT" "$@" </dev/null >"$tap_tmp/out" \
		2>"$tap_tmp/err"
	rc=$?
	first=$(head -n 1 "$tap_tmp/err" | cut -c 1-300)
	why=
	[ "$rc" = "$status" ] || why="exit status $rc, expected $status"
	if [ -n "$pattern" ]; then
		case $first in
		*"$pattern"*) ;;
		*) why="$why${why:+; }first line of stderr: $first" ;;
		esac
	fi
	if [ -z "$why" ]; then
		ok "$name"
	else
		not_ok "$name" "$why" "$(head -c 300 "$tap_tmp/err")"
	fi
}

# kind NAME STATUS PATTERN BEFORE TOKEN-UNIT AFTER: the program BEFORE,
# the unit repeated to each size, AFTER.
kind()
{
	kname=$1 kstatus=$2 kpattern=$3 before=$4 unit=$5 after=$6
	for size in 16384 65536 1048576; do
		{
			printf '%s' "$before"
			repeat "$size" "$unit"
			printf '%s' "$after"
		} >"$tap_tmp/prog.bt" || bail "cannot write a program"
		check "$kname, $size bytes, script file" "$kstatus" \
			"$kpattern" -- --dry-run "$tap_tmp/prog.bt"
		[ "$size" -lt 100000 ] || continue
		check "$kname, $size bytes, -e" "$kstatus" "$kpattern" -- \
			--dry-run -e "$(cat "$tap_tmp/prog.bt")"
	done
}

kind "variable name" 0 '' 'BEGIN { $' a ' = 1; exit(); }'
kind "map name" 0 '' 'BEGIN { @' a ' = 1; exit(); }'
kind "map key string" 1 'ERROR: String is too long (over 64 bytes)' \
	'BEGIN { @m["' a '"] = 1; exit(); }'
kind "format string" 0 '' 'BEGIN { printf("' a '\n"); exit(); }'
kind "string argument" 1 'ERROR: String is too long (over 64 bytes)' \
	'BEGIN { printf("%s\n", "' a '"); exit(); }'
kind "decimal number" 1 'ERROR: integer literal out of range: 111' \
	'BEGIN { @x = ' 1 '; exit(); }'
kind "number with leading zeros" 0 '' 'BEGIN { @x = 0x' 0 '1; exit(); }'
kind "block comment" 0 '' '/* ' a ' */ BEGIN { exit(); }'
kind "line comment" 0 '' '// ' a '
BEGIN { exit(); }'
kind "unterminated comment" 1 'ERROR: end of file during comment' \
	'BEGIN { exit(); } /* ' a ''
kind "unterminated string" 1 'ERROR: unterminated string' \
	'BEGIN { printf("' a ''
kind "function name" 1 'ERROR: Unknown function: aaa' 'BEGIN { ' a '(); }'
kind "probe name" 1 'ERROR: Invalid probe type: aaa' '' a ' { exit(); }'
kind "type name in a cast" 1 "ERROR: Unknown type: 'aaa" \
	'BEGIN { $x = (' a ' *)0; exit(); }'
kind "C definition" 0 '' 'struct ' a ' { int x; }
BEGIN { exit(); }'
kind "#include line" 1 'error: cannot open file' '#include <' a '.h>
BEGIN { exit(); }'
kind "blanks" 0 '' 'BEGIN {' ' ' ' exit(); }'
kind "newlines" 0 '' 'BEGIN {' '
' ' exit(); }'
kind "positional parameter" 1 'ERROR: param $999' 'BEGIN { @x = $' 9 '; }'

# A real run with a map of a 16 KiB name: the kernel takes the program's
# BTF (names of 512 bytes or more it refuses, and libbpf says so at length).
if [ "$(id -u)" = 0 ]; then
	{
		printf 'BEGIN { @'
		repeat 16384 a
		printf ' = 1; exit(); }'
	} >"$tap_tmp/prog.bt" || bail "cannot write a program"
	timeout -k 5 120 "$UBT" "$tap_tmp/prog.bt" </dev/null \
		>"$tap_tmp/out" 2>"$tap_tmp/err"
	rc=$?
	if [ "$rc" = 0 ] && [ ! -s "$tap_tmp/err" ] &&
	   grep -q '^@aaaaaaaa*: 1$' "$tap_tmp/out"; then
		ok "map name, 16384 bytes, real run"
	else
		not_ok "map name, 16384 bytes, real run" "exit status $rc" \
			"$(head -c 300 "$tap_tmp/err")"
	fi
fi

# Attach points are resolved, not only parsed: --parse-only.
for size in 16384 1048576; do
	{
		printf 'uprobe:/bin/sh:'
		repeat "$size" a
		printf ' { exit(); }'
	} >"$tap_tmp/prog.bt" || bail "cannot write a program"
	check "attach point, $size bytes" 0 '' -- --parse-only \
		"$tap_tmp/prog.bt"
done

# Nesting: the passes after the parser recurse over the tree.
{
	printf 'BEGIN { @x = 1'
	repeat 4990 ' + 1'
	printf '; exit(); }'
} >"$tap_tmp/prog.bt"
check "expression 4990 levels deep" 0 '' -- --dry-run "$tap_tmp/prog.bt"
{
	printf 'BEGIN { @x = 1'
	repeat 100000 ' + 1'
	printf '; exit(); }'
} >"$tap_tmp/prog.bt"
check "expression 100000 levels deep" 1 \
	'ERROR: the program is nested too deeply: more than 5000 levels' -- \
	--dry-run "$tap_tmp/prog.bt"
{
	printf 'BEGIN { @x = '
	repeat 20000 '('
	printf 1
	repeat 20000 ')'
	printf '; exit(); }'
} >"$tap_tmp/prog.bt"
check "20000 parentheses" 0 '' -- --dry-run "$tap_tmp/prog.bt"
{
	printf 'BEGIN { @x = '
	repeat 200000 '('
	printf 1
} >"$tap_tmp/prog.bt"
check "200000 parentheses" 1 \
	'ERROR: the program is nested too deeply for the parser' -- \
	--parse-only "$tap_tmp/prog.bt"
{
	printf 'BEGIN { $a = 1; if ($a == 0) { @x = 0; }'
	repeat 6000 ' else if ($a == 1) { @x = 1; }'
	printf ' exit(); }'
} >"$tap_tmp/prog.bt"
check "6000 else if" 1 \
	'ERROR: the program is nested too deeply: more than 5000 levels' -- \
	--parse-only "$tap_tmp/prog.bt"

# A NUL byte ends the program text, as in bpftrace.
printf 'BEGIN { printf("a\0b\\n"); exit(); }' >"$tap_tmp/prog.bt"
check "NUL byte in a string" 1 'ERROR: unterminated string' -- \
	--parse-only "$tap_tmp/prog.bt"

# A large program: a tuple that cannot fit in a kernel probe's room for
# temporaries, refused before LLVM spends minutes on it.
{
	printf 'BEGIN { @x = (1'
	repeat 300000 ',1'
	printf '); exit(); }'
} >"$tap_tmp/prog.bt"
check "tuple of 300001 elements" 1 \
	"ERROR: tuple of 2400008 bytes does not fit in a kernel probe's room for temporaries (32768 bytes)" \
	-- --dry-run "$tap_tmp/prog.bt"

tap_done
