# shim/place/: placement: where each probe and site runs (shim/place/README)
libubt_a_SOURCES += \
	shim/place/place.c \
	shim/place/place.h \
	shim/place/place_body.c \
	shim/place/place_int.h \
	shim/place/place_mntns.c \
	shim/place/place_pidns.c \
	shim/place/place_reads.c \
	shim/place/place_site.c \
	shim/place/place_slot.c \
	shim/place/place_static.c \
	shim/place/place_xmap.c
