/* The types of tests/targets/types.c, for --include in types.test. */
enum ubt_color { UBT_RED = 1, UBT_GREEN = 2, UBT_BLUE = 4 };

struct ubt_inner {
	int b;
	short c;
};

struct ubt_rec {
	int id;
	char name[8];
	enum ubt_color color;
	struct ubt_inner inner;
	struct ubt_inner *next;
	int arr[4];
	unsigned int flags : 3;
	unsigned int mode : 5;
	long *vals;
};

#define UBT_NROUNDS 3
