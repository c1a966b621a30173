/*
 * The --metrics endpoint: [ADDR:]PORT parsed, the socket bound before
 * anything is attached, libmicrohttpd in "external" mode (no thread: the
 * run loop calls metrics_poll(), and each request is answered there),
 * GET/HEAD /metrics, 404 for any other path, 405 for other methods.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <microhttpd.h>
#include "util.h"
#include "metrics_int.h"

/* Slow or idle clients are dropped after this many seconds. */
#define METRICS_TIMEOUT_S 10
/* Connections at once; more are closed as they come. */
#define METRICS_MAX_CONNS 32
/* Memory per connection for the request (headers) */
#define METRICS_CONN_MEMORY (32 * 1024)
/* heap kept free between scrapes rather than given back (metrics_open()) */
#define METRICS_HEAP_KEEP (64 << 20)

struct metrics_addr {
	struct sockaddr_storage ss;
	socklen_t len;
	char text[80];		/* for messages */
};

static int metrics_addr_parse(const char *spec, struct metrics_addr *a,
			      const char **why)
{
	char host[64] = "127.0.0.1";
	const char *port = spec, *colon;
	char *end;
	long p;

	memset(a, 0, sizeof(*a));
	if (!spec || !*spec) {
		*why = "empty";
		return -EINVAL;
	}
	if (spec[0] == '[') {
		const char *rb = strchr(spec, ']');

		if (!rb || rb[1] != ':' || (size_t)(rb - spec - 1) >= sizeof(host)) {
			*why = "expected [IPV6]:PORT";
			return -EINVAL;
		}
		memcpy(host, spec + 1, rb - spec - 1);
		host[rb - spec - 1] = 0;
		port = rb + 2;
	} else if ((colon = strrchr(spec, ':'))) {
		if (memchr(spec, ':', colon - spec)) {
			*why = "an IPv6 address goes in brackets: [ADDR]:PORT";
			return -EINVAL;
		}
		if ((size_t)(colon - spec) >= sizeof(host) || colon == spec) {
			*why = "expected [ADDR:]PORT";
			return -EINVAL;
		}
		memcpy(host, spec, colon - spec);
		host[colon - spec] = 0;
		port = colon + 1;
	}
	errno = 0;
	p = strtol(port, &end, 10);
	if (!*port || *end || errno || p < 0 || p > 65535) {
		*why = "the port is not a number from 0 to 65535";
		return -EINVAL;
	}
	if (!strcmp(host, "localhost"))
		strcpy(host, "127.0.0.1");
	if (strchr(host, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&a->ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(p);
		if (inet_pton(AF_INET6, host, &s6->sin6_addr) != 1) {
			*why = "not an IPv6 address";
			return -EINVAL;
		}
		a->len = sizeof(*s6);
		snprintf(a->text, sizeof(a->text), "[%s]:%ld", host, p);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&a->ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(p);
		if (inet_pton(AF_INET, host, &s4->sin_addr) != 1) {
			*why = "not an IPv4 address (names other than "
			       "localhost are not looked up)";
			return -EINVAL;
		}
		a->len = sizeof(*s4);
		snprintf(a->text, sizeof(a->text), "%s:%ld", host, p);
	}
	return 0;
}

int metrics_parse_listen(const char *spec, const char **why)
{
	struct metrics_addr a;

	return metrics_addr_parse(spec, &a, why);
}

bool metrics_prefix_ok(const char *p)
{
	for (size_t i = 0; p[i]; i++) {
		char c = p[i];

		if (!(c == '_' || (c >= 'a' && c <= 'z') ||
		      (c >= 'A' && c <= 'Z') || (i && c >= '0' && c <= '9')))
			return false;
	}
	return true;
}

static enum MHD_Result metrics_reply(struct MHD_Connection *c,
				     unsigned status, const char *text,
				     const char *allow)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(strlen(text), (void *)text,
					    MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				"text/plain; charset=utf-8");
	if (allow)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* Does the Accept header ask for OpenMetrics? */
static bool metrics_wants_openmetrics(struct MHD_Connection *c)
{
	const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						    MHD_HTTP_HEADER_ACCEPT);

	return a && strstr(a, "application/openmetrics-text");
}

static enum MHD_Result metrics_request(void *cls, struct MHD_Connection *c,
				       const char *url, const char *method,
				       const char *version,
				       const char *upload_data,
				       size_t *upload_data_size, void **state)
{
	static int seen;
	struct metrics *m = cls;
	struct MHD_Response *r;
	enum MHD_Result ret;
	bool om;
	size_t len;
	char *page;

	/* the headers first; a body (nobody should send one) is skipped */
	if (!*state) {
		*state = &seen;
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (strcmp(method, MHD_HTTP_METHOD_GET) &&
	    strcmp(method, MHD_HTTP_METHOD_HEAD))
		return metrics_reply(c, MHD_HTTP_METHOD_NOT_ALLOWED,
				     "Method Not Allowed\n", "GET, HEAD");
	if (strcmp(url, "/metrics"))
		return metrics_reply(c, MHD_HTTP_NOT_FOUND, "Not Found\n",
				     NULL);
	om = metrics_wants_openmetrics(c);
	page = metrics_page(m, om, &len);
	r = MHD_create_response_from_buffer(len, page, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(page);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				om ? "application/openmetrics-text; "
				     "version=1.0.0; charset=utf-8" :
				     "text/plain; version=0.0.4; "
				     "charset=utf-8");
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

int metrics_open(const struct metrics_opts *o, struct metrics **out)
{
	struct metrics_addr a;
	struct sockaddr_storage got;
	socklen_t glen = sizeof(got);
	struct metrics *m;
	const char *why = NULL;
	int one = 1, fd, err;

	*out = NULL;
	if (metrics_addr_parse(o->listen, &a, &why)) {
		fprintf(stderr, "ubt: cannot serve metrics on %s: %s\n",
			o->listen ? o->listen : "", why);
		return -EINVAL;
	}
	fd = socket(a.ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    0);
	if (fd < 0) {
		err = -errno;
		goto fail;
	}
	/* a port in TIME_WAIT from an earlier run is free; one in use not */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (a.ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a.ss, a.len) ||
	    listen(fd, METRICS_MAX_CONNS) ||
	    getsockname(fd, (struct sockaddr *)&got, &glen)) {
		err = -errno;
		close(fd);
		goto fail;
	}
	m = xcalloc(1, sizeof(*m));
	m->lfd = fd;
	m->port = ntohs(got.ss_family == AF_INET6 ?
				((struct sockaddr_in6 *)&got)->sin6_port :
				((struct sockaddr_in *)&got)->sin_port);
	m->prefix = xstrdup(o->prefix ? o->prefix : METRICS_DEFAULT_PREFIX);
	m->max_keys = o->max_keys ? o->max_keys : METRICS_DEFAULT_MAX_KEYS;
	m->d = MHD_start_daemon(MHD_USE_EPOLL |
				(a.ss.ss_family == AF_INET6 ? MHD_USE_IPv6 :
							      0),
				0, NULL, NULL, metrics_request, m,
				MHD_OPTION_LISTEN_SOCKET, fd,
				MHD_OPTION_CONNECTION_LIMIT,
				(unsigned)METRICS_MAX_CONNS,
				MHD_OPTION_CONNECTION_TIMEOUT,
				(unsigned)METRICS_TIMEOUT_S,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT,
				(size_t)METRICS_CONN_MEMORY,
				MHD_OPTION_END);
	if (!m->d) {
		close(fd);
		free(m->prefix);
		free(m);
		fprintf(stderr, "ubt: cannot serve metrics on %s: "
			"libmicrohttpd did not start\n", a.text);
		return -EIO;
	}
	/*
	 * Every scrape builds its page and reads the maps into buffers of
	 * a few MiB, made anew and freed: glibc would mmap and unmap each,
	 * and the kernel fault in each page again.  Kept in the heap
	 * between scrapes instead: a 10,000-key page took 24 ms to build,
	 * 6.7 ms so (bench/metrics.py).
	 */
	mallopt(M_MMAP_THRESHOLD, METRICS_HEAP_KEEP / 2);
	mallopt(M_TRIM_THRESHOLD, METRICS_HEAP_KEEP);
	*out = m;
	return 0;
fail:
	fprintf(stderr, "ubt: cannot serve metrics on %s: %s\n", a.text,
		strerror(-err));
	return err;
}

int metrics_port(const struct metrics *m)
{
	return m ? m->port : 0;
}

void metrics_free(struct metrics *m)
{
	if (!m)
		return;
	/* MHD closes the listening socket it was given */
	MHD_stop_daemon(m->d);
	for (int i = 0; i < m->nmaps; i++) {
		free(m->maps[i].family);
		free(m->maps[i].help);
	}
	free(m->maps);
	free(m->probes);
	free(m->where);
	free(m->prefix);
	free(m);
}

void metrics_set_maps(struct metrics *m, metrics_maps_fn fn, void *ctx)
{
	if (!m)
		return;
	m->maps_fn = fn;
	m->maps_ctx = ctx;
}

void metrics_set_self(struct metrics *m, metrics_self_fn fn, void *ctx)
{
	if (!m)
		return;
	m->self_fn = fn;
	m->self_ctx = ctx;
}

int metrics_fd(const struct metrics *m)
{
	const union MHD_DaemonInfo *i;

	if (!m)
		return -1;
	i = MHD_get_daemon_info(m->d, MHD_DAEMON_INFO_EPOLL_FD);
	return i ? i->epoll_fd : -1;
}

void metrics_poll(struct metrics *m)
{
	MHD_UNSIGNED_LONG_LONG t;

	if (!m || !m->maps_fn)
		return;
	/* a page larger than the socket takes goes on while MHD says it
	 * has more to do at once (bounded: the loop has its own work) */
	for (int i = 0; i < 16; i++) {
		MHD_run(m->d);
		if (MHD_get_timeout(m->d, &t) != MHD_YES || t > 0)
			break;
	}
}
