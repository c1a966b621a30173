dist_man_MANS += man/ubt.8
