# UBT_LLVM: find LLVM 19 through llvm-config, keep only -I/-D from --cppflags
# (the pattern of PostgreSQL's config/llvm.m4), and gate on the major version.
AC_DEFUN([UBT_LLVM], [
	AC_ARG_VAR([LLVM_CONFIG], [path to llvm-config (LLVM 19)])
	AC_PATH_PROGS([LLVM_CONFIG], [llvm-config-19 llvm-config])
	AS_IF([test -z "$LLVM_CONFIG"],
		[AC_MSG_ERROR([llvm-config not found: apt-get install llvm-19-dev])])
	ubt_llvm_version=`$LLVM_CONFIG --version`
	AC_MSG_CHECKING([for LLVM 19])
	AS_CASE([$ubt_llvm_version],
		[19.*], [AC_MSG_RESULT([$ubt_llvm_version])],
		[AC_MSG_RESULT([no ($ubt_llvm_version)])
		 AC_MSG_ERROR([LLVM 19 is required: apt-get install llvm-19-dev])])
	LLVM_CPPFLAGS=
	for ubt_flag in `$LLVM_CONFIG --cppflags`; do
		AS_CASE([$ubt_flag], [-I*|-D*], [LLVM_CPPFLAGS="$LLVM_CPPFLAGS $ubt_flag"])
	done
	dnl Static by default: only the components ubt uses are mapped, which
	dnl halves start-up memory (63 -> ~33 MiB RSS for BEGIN { exit(); }).
	AC_ARG_WITH([llvm-static],
		[AS_HELP_STRING([--with-llvm-static=yes|no],
			[link the LLVM components statically (default: yes)])],
		[], [with_llvm_static=yes])
	ubt_llvm_components="bpf x86 passes core mc target analysis"
	AS_IF([test "x$with_llvm_static" != xno],
		[LLVM_LIBS="`$LLVM_CONFIG --ldflags` `$LLVM_CONFIG --link-static --libs $ubt_llvm_components` `$LLVM_CONFIG --link-static --system-libs` -lstdc++"],
		[LLVM_LIBS="`$LLVM_CONFIG --ldflags` `$LLVM_CONFIG --libs` `$LLVM_CONFIG --system-libs`"])
	AC_SUBST([LLVM_CPPFLAGS])
	AC_SUBST([LLVM_LIBS])
])
