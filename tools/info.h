/* --info: the kernel's BPF support, as bpftrace 0.17 prints it. */
#ifndef UBT_INFO_H
#define UBT_INFO_H

#include <stdio.h>

int info_print(FILE *f);

#endif
