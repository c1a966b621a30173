#!/bin/sh
# Calls between the files of each folder run one way (shim/README,
# codegen/README, frontend/README): no circle of calls between object
# files, except the recursions of expressions the READMEs name; and
# shim/'s stage folders call each other one way too (shim/README).

. "${top_srcdir:?}/tests/cli/tap.sh"

: "${top_builddir:?top_builddir must be set}"
command -v nm >/dev/null || bail "nm is not installed (apt-get install binutils)"
command -v python3 >/dev/null || bail "python3 is not installed"

for dir in frontend codegen probes shim runtime; do
	case $dir in
	runtime) objs=$(ls "$top_builddir/$dir"/libubt_rt_so-*.o 2>/dev/null) ;;
	shim) objs=$(ls "$top_builddir/$dir"/*/libubt_a-*.o 2>/dev/null) ;;
	*) objs=$(ls "$top_builddir/$dir"/libubt_a-*.o 2>/dev/null) ;;
	esac
	[ -n "$objs" ] || bail "no object files in $top_builddir/$dir"
	# shellcheck disable=SC2086
	out=$(python3 "$top_srcdir/tools/cycles.py" $objs \
		--allow 'cg_expr: cg_call cg_call_new cg_call_out cg_call_val cg_field cg_map cg_path cg_stmt cg_tseries' \
		--allow 'sema_expr: func_print sema_field sema_tables sema_types' 2>&1)
	if [ $? = 0 ]; then
		ok "$dir/: no circle of calls between files"
	else
		not_ok "$dir/: no circle of calls between files" "$out"
	fi
done

# shim/'s folders: run -> place -> user -> patch -> process, kernel ->
# output, every one -> base; never back.
objs=$(ls "$top_builddir"/shim/*/libubt_a-*.o 2>/dev/null)
# shellcheck disable=SC2086
out=$(python3 "$top_srcdir/tools/cycles.py" --folders $objs 2>&1)
if [ $? = 0 ]; then
	ok "shim/: no circle of calls between its folders"
else
	not_ok "shim/: no circle of calls between its folders" "$out"
fi
tap_done
