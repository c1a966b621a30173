bin_PROGRAMS += ubt
ubt_SOURCES = tools/main.c
ubt_LDADD = $(UBT_LIBS)
