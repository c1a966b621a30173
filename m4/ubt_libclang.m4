# UBT_LIBCLANG: libclang 19's C API for C definitions in scripts, next to
# the LLVM that UBT_LLVM found (its --includedir and --libdir). ubt
# dlopen()s the library (UBT_LIBCLANG_PATH, the file the -dev package's
# libclang.so names) when a program has C definitions, so that programs
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
		AS_IF([test "x$ubt_clang_h" = xyes && test -e "$ubt_llvm_libdir/libclang.so"],
			[ubt_libclang=`readlink -f "$ubt_llvm_libdir/libclang.so"`])
		AS_IF([test -n "$ubt_libclang"],
			[AC_MSG_RESULT([$ubt_libclang])
			 AC_DEFINE_UNQUOTED([UBT_LIBCLANG_PATH], ["$ubt_libclang"],
				[libclang, loaded for C definitions in scripts])],
			[AC_MSG_RESULT([no])
			 AS_IF([test "x$with_libclang" = xyes],
				[AC_MSG_ERROR([libclang 19 not found: apt-get install libclang-19-dev])])])
	])
])
