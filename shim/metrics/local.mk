# shim/metrics/: --metrics, the maps served live to Prometheus (shim/metrics/README)
libubt_a_SOURCES += \
	shim/metrics/metrics.c \
	shim/metrics/metrics.h \
	shim/metrics/metrics_int.h \
	shim/metrics/metrics_page.c \
	shim/metrics/metrics_plan.c
