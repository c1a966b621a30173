# debugf() cases (functions.test): debugf.sh begin|uprobe TARGETS TRACER...
# runs the tracer with debugf() lines marked by this shell's pid, then
# looks for them in the kernel's trace buffer.
what=$1 targets=$2
shift 2
m=$$
tr=/sys/kernel/tracing/trace
case $what in
begin)
	"$@" -e "BEGIN { debugf(\"ubt-debugf-%d %s %u\n\", $m, \"x\", 7);
		debugf(\"ubt-debugf-%d %d %d %d\n\", $m, 2, 3, 4); exit(); }" 2>&1
	grep -q "ubt-debugf-$m x 7\$" $tr && echo first found
	grep -q "ubt-debugf-$m 2 3 4\$" $tr && echo second found
	;;
uprobe)
	"$@" -c "$targets/ubt-calls 2" -e "uprobe:$targets/ubt-calls:ubt_add {
		debugf(\"ubt-debugf-u%d-%d\n\", $m, arg0); }" >/dev/null 2>&1
	grep -c "ubt-debugf-u$m-[12]\$" $tr
	;;
esac
