# shim/: see shim/README; each stage's files are in its folder's local.mk
include shim/base/local.mk
include shim/place/local.mk
include shim/run/local.mk
include shim/kernel/local.mk
include shim/user/local.mk
include shim/patch/local.mk
include shim/process/local.mk
include shim/metrics/local.mk
include shim/output/local.mk
