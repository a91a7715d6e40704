# GM_CHECK_CFLAG(FLAG, [ACTION-IF-OK], [ACTION-IF-NOT])
# Compiles an empty program with FLAG (and -Werror, so that an unknown flag
# that is only warned about counts as unsupported).
AC_DEFUN([GM_CHECK_CFLAG], [
  AS_VAR_PUSHDEF([gm_var], [gm_cv_cflag_$1])
  AC_CACHE_CHECK([whether $CC accepts $1], [gm_var], [
    gm_save_CFLAGS="$CFLAGS"
    CFLAGS="$CFLAGS -Werror $1"
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[]], [[]])],
      [AS_VAR_SET([gm_var], [yes])], [AS_VAR_SET([gm_var], [no])])
    CFLAGS="$gm_save_CFLAGS"])
  AS_VAR_IF([gm_var], [yes], [$2], [$3])
  AS_VAR_POPDEF([gm_var])
])
