# UBT_LIBCLANG: libclang 19's C API for C definitions in scripts, next to
# the LLVM that UBT_LLVM found (its --includedir and --libdir). ubt
# dlopen()s the library (UBT_LIBCLANG_PATH, in LLVM's libdir) when a
# program has C definitions, so that programs
# without them start without it.
AC_DEFUN([UBT_LIBCLANG], [
	AC_ARG_WITH([libclang],
		[AS_HELP_STRING([--with-libclang=yes|no|check],
			[C definitions in scripts through libclang 19 (default: check)])],
		[], [with_libclang=check])
	ubt_libclang=
	AS_IF([test "x$with_libclang" != xno], [
		ubt_save_CPPFLAGS=$CPPFLAGS
		CPPFLAGS="$CPPFLAGS $LLVM_CPPFLAGS"
		AC_CHECK_HEADER([clang-c/Index.h], [ubt_clang_h=yes], [ubt_clang_h=no])
		CPPFLAGS=$ubt_save_CPPFLAGS
		ubt_llvm_libdir=`$LLVM_CONFIG --libdir`
		AC_MSG_CHECKING([for libclang])
		dnl the path in LLVM's libdir, not the file it links to: libclang
		dnl finds its resource directory (stddef.h, ...) next to it
		AS_IF([test "x$ubt_clang_h" = xyes], [
			for ubt_f in libclang-19.so.1 libclang.so; do
				AS_IF([test -z "$ubt_libclang" && test -e "$ubt_llvm_libdir/$ubt_f"],
					[ubt_libclang=$ubt_llvm_libdir/$ubt_f])
			done])
		AS_IF([test -n "$ubt_libclang"],
			[AC_MSG_RESULT([$ubt_libclang])
			 AC_DEFINE_UNQUOTED([UBT_LIBCLANG_PATH], ["$ubt_libclang"],
				[libclang, loaded for C definitions in scripts])
			 ubt_llvm_major=`$LLVM_CONFIG --version | sed 's/\..*//'`
			 AS_IF([test -d "$ubt_llvm_libdir/clang/$ubt_llvm_major/include"],
				[AC_DEFINE_UNQUOTED([UBT_CLANG_RESOURCE_DIR],
					["$ubt_llvm_libdir/clang/$ubt_llvm_major"],
					[clang's own headers, for C definitions])])],
			[AC_MSG_RESULT([no])
			 AS_IF([test "x$with_libclang" = xyes],
				[AC_MSG_ERROR([libclang 19 not found: apt-get install libclang-19-dev])])])
	])
])
