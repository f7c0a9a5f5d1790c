/* C tests of the gantry ABI against a real S3 server (the Rust harness ffi/tests/c_api.rs starts
 * one and passes GANTRY_TEST_ENDPOINT). Built with -Wall -Wextra -Werror -Wpedantic and run under
 * valgrind by the harness. Every check prints what failed and exits non-zero. */
#include "gantry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <pthread.h>
#include <stddef.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures = 0;
static int checks = 0;

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        checks++;                                                           \
        if (!(cond)) {                                                      \
            failures++;                                                     \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                   \
            fprintf(stderr, "\n");                                          \
        }                                                                   \
    } while (0)


static const size_t PART = 5u << 20;

static unsigned char *pattern(size_t len, unsigned seed) {
    unsigned char *p = malloc(len ? len : 1);
    unsigned x = seed * 2654435761u + 1;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13; x ^= x >> 17; x ^= x << 5;
        p[i] = (unsigned char)x;
    }
    return p;
}

static gantry_client *make_client(const char *endpoint, const char *secret) {
    gantry_config *cfg = NULL;
    gantry_error *err = NULL;
    CHECK(gantry_config_new(&cfg, &err) == GANTRY_RESULT_OK, "config_new");
    CHECK(gantry_config_set(cfg, "endpoint_url", endpoint, NULL) == GANTRY_RESULT_OK, "endpoint");
    CHECK(gantry_config_set(cfg, "access_key_id", "gantry", NULL) == GANTRY_RESULT_OK, "key");
    CHECK(gantry_config_set(cfg, "secret_access_key", secret, NULL) == GANTRY_RESULT_OK, "secret");
    CHECK(gantry_config_set(cfg, "part_size", "5MiB", NULL) == GANTRY_RESULT_OK, "part size");
    /* Server-side copies above one part go multipart here, so the test sees UploadPartCopy. */
    CHECK(gantry_config_set(cfg, "copy_threshold", "5MiB", NULL) == GANTRY_RESULT_OK, "copy threshold");
    CHECK(gantry_config_set(cfg, "copy_part_size", "5MiB", NULL) == GANTRY_RESULT_OK, "copy part size");
    CHECK(gantry_config_set(cfg, "max_connections", "4", NULL) == GANTRY_RESULT_OK, "connections");
    CHECK(gantry_config_set(cfg, "memory_limit", "64MiB", NULL) == GANTRY_RESULT_OK, "memory");
    CHECK(gantry_config_set(cfg, "worker_threads", "2", NULL) == GANTRY_RESULT_OK, "threads");
    gantry_client *client = NULL;
    gantry_result r = gantry_client_new(cfg, &client, &err);
    CHECK(r == GANTRY_RESULT_OK, "client_new: %s", gantry_error_message(err));
    gantry_error_free(err);
    gantry_config_free(cfg);
    return client;
}

static void test_version(void) {
    char want[64];
    snprintf(want, sizeof want, "%d.%d.%d", GANTRY_VERSION_MAJOR, GANTRY_VERSION_MINOR, GANTRY_VERSION_PATCH);
    CHECK(strcmp(gantry_version(), want) == 0, "version %s vs macros %s", gantry_version(), want);
}

static void test_config_errors(void) {
    gantry_config *cfg = NULL;
    gantry_error *err = NULL;
    CHECK(gantry_config_new(NULL, &err) == GANTRY_RESULT_NULL_PARAMETER, "NULL out_config");
    CHECK(gantry_error_result(err) == GANTRY_RESULT_NULL_PARAMETER, "error carries the code");
    CHECK(strstr(gantry_error_message(err), "out_config") != NULL, "message names the argument: %s", gantry_error_message(err));
    gantry_error_free(err);
    err = NULL;
    gantry_config_new(&cfg, NULL);
    CHECK(gantry_config_set(cfg, "no_such_key", "1", &err) == GANTRY_RESULT_INVALID_ARGUMENT, "unknown key");
    gantry_error_free(err);
    CHECK(gantry_config_set(cfg, "part_size", "lots", NULL) == GANTRY_RESULT_INVALID_ARGUMENT, "bad size");
    CHECK(gantry_config_set(cfg, NULL, "x", NULL) == GANTRY_RESULT_NULL_PARAMETER, "NULL key");
    CHECK(gantry_config_set(NULL, "region", "x", NULL) == GANTRY_RESULT_NULL_PARAMETER, "NULL config");
    CHECK(gantry_config_set(cfg, "part_size", "1MiB", NULL) == GANTRY_RESULT_OK, "accepted, checked at build");
    gantry_config_set(cfg, "anonymous", "true", NULL);
    gantry_client *client = NULL;
    err = NULL;
    CHECK(gantry_client_new(cfg, &client, &err) == GANTRY_RESULT_INVALID_ARGUMENT, "part size below 5 MiB refused");
    CHECK(client == NULL, "no client on failure");
    CHECK(strstr(gantry_error_message(err), "part size") != NULL, "%s", gantry_error_message(err));
    gantry_error_free(err);
    gantry_config_free(cfg);
    gantry_config_free(NULL);
    gantry_error_free(NULL);
    gantry_client_free(NULL);
    gantry_upload_free(NULL);
}

static void roundtrip(gantry_client *c, const char *bucket, size_t len, unsigned seed, const char *dir) {
    char key[64], path[512];
    snprintf(key, sizeof key, "obj-%zu", len);
    unsigned char *data = pattern(len, seed);
    gantry_error *err = NULL;
    CHECK(gantry_put_buffer(c, bucket, key, data, len, &err) == GANTRY_RESULT_OK, "put %zu: %s", len, gantry_error_message(err));
    gantry_error_free(err);
    err = NULL;

    unsigned char *back = malloc(len + 1);
    uint64_t size = 12345;
    CHECK(gantry_get_into(c, bucket, key, back, len, &size, &err) == GANTRY_RESULT_OK, "get %zu: %s", len, gantry_error_message(err));
    gantry_error_free(err);
    err = NULL;
    CHECK(size == len, "size %llu vs %zu", (unsigned long long)size, len);
    CHECK(len == 0 || memcmp(back, data, len) == 0, "bytes of %zu differ", len);

    snprintf(path, sizeof path, "%s/down-%zu", dir, len);
    CHECK(gantry_get_to_file(c, bucket, key, path, &size, NULL) == GANTRY_RESULT_OK, "get_to_file %zu", len);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL, "file exists");
    if (f) {
        memset(back, 0, len + 1);
        size_t n = fread(back, 1, len + 1, f);
        fclose(f);
        CHECK(n == len && (len == 0 || memcmp(back, data, len) == 0), "file bytes of %zu differ", len);
    }

    /* Upload from a file, then through the streaming writer in odd-sized writes. */
    snprintf(key, sizeof key, "file-%zu", len);
    CHECK(gantry_put_file(c, bucket, key, path, NULL) == GANTRY_RESULT_OK, "put_file %zu", len);
    CHECK(gantry_head_object(c, bucket, key, &size, NULL) == GANTRY_RESULT_OK && size == len, "head %zu", len);

    snprintf(key, sizeof key, "stream-%zu", len);
    gantry_upload *up = NULL;
    CHECK(gantry_upload_new(c, bucket, key, &up, NULL) == GANTRY_RESULT_OK, "upload_new");
    for (size_t off = 0; off < len; off += 1000003) {
        size_t n = len - off < 1000003 ? len - off : 1000003;
        CHECK(gantry_upload_write(up, data + off, n, NULL) == GANTRY_RESULT_OK, "write");
    }
    CHECK(gantry_upload_complete(up, NULL) == GANTRY_RESULT_OK, "complete %zu", len);
    err = NULL;
    CHECK(gantry_upload_write(up, data, 1, &err) == GANTRY_RESULT_INVALID_STATE, "write after complete");
    gantry_error_free(err);
    CHECK(gantry_upload_complete(up, NULL) == GANTRY_RESULT_INVALID_STATE, "complete twice");
    gantry_upload_free(up);
    memset(back, 0, len + 1);
    CHECK(gantry_get_into(c, bucket, key, back, len, &size, NULL) == GANTRY_RESULT_OK && size == len, "get stream %zu", len);
    CHECK(len == 0 || memcmp(back, data, len) == 0, "streamed bytes of %zu differ", len);
    free(back);
    free(data);
}

static void test_ranges(gantry_client *c, const char *bucket) {
    size_t len = 3 * PART + 11;
    unsigned char *want = pattern(len, 4);
    char key[64];
    snprintf(key, sizeof key, "obj-%zu", len);
    unsigned char *buf = malloc(len);
    uint64_t written = 0;
    uint64_t cases[][2] = {{0, 1}, {PART - 2, 5}, {7, 2 * PART}, {len - 3, 100}};
    for (size_t i = 0; i < 4; i++) {
        uint64_t off = cases[i][0], n = cases[i][1];
        CHECK(gantry_get_range_into(c, bucket, key, off, n, buf, len, &written, NULL) == GANTRY_RESULT_OK, "range %zu", i);
        uint64_t expect = off + n > len ? len - off : n;
        CHECK(written == expect && memcmp(buf, want + off, (size_t)expect) == 0, "range %zu bytes (%llu)", i,
              (unsigned long long)written);
    }
    gantry_error *err = NULL;
    CHECK(gantry_get_range_into(c, bucket, key, len, 10, buf, len, NULL, &err) == GANTRY_RESULT_CLIENT_ERROR, "past the end");
    CHECK(gantry_error_http_status(err) == 416, "416");
    gantry_error_free(err);
    CHECK(gantry_get_range_into(c, bucket, key, 0, 10, buf, 5, NULL, NULL) == GANTRY_RESULT_INVALID_ARGUMENT, "small buffer");
    free(buf);
    free(want);
}

static void test_errors(gantry_client *c, const char *bucket, const char *endpoint) {
    gantry_error *err = NULL;
    unsigned char small[4] = {1, 2, 3, 4};
    uint64_t size = 777;
    CHECK(gantry_get_into(c, bucket, "missing", small, sizeof small, &size, &err) == GANTRY_RESULT_NOT_FOUND, "missing key");
    CHECK(size == 777, "out_size untouched on failure");
    CHECK(gantry_error_http_status(err) == 404, "status %u", gantry_error_http_status(err));
    CHECK(gantry_error_s3_code(err) && strcmp(gantry_error_s3_code(err), "NoSuchKey") == 0, "s3 code");
    CHECK(!gantry_error_retryable(err), "404 is final");
    gantry_error_free(err);
    err = NULL;
    CHECK(gantry_get_into(c, bucket, "obj-1", small, 0, NULL, &err) == GANTRY_RESULT_INVALID_ARGUMENT, "buffer too small");
    gantry_error_free(err);
    CHECK(gantry_get_into(c, NULL, "k", small, 4, NULL, NULL) == GANTRY_RESULT_NULL_PARAMETER, "NULL bucket");
    CHECK(gantry_get_into(NULL, bucket, "k", small, 4, NULL, NULL) == GANTRY_RESULT_NULL_PARAMETER, "NULL client");
    CHECK(gantry_get_into(c, bucket, "obj-1", NULL, 4, NULL, NULL) == GANTRY_RESULT_NULL_PARAMETER, "NULL buffer");
    CHECK(gantry_put_buffer(c, bucket, "k", NULL, 4, NULL) == GANTRY_RESULT_NULL_PARAMETER, "NULL data");
    CHECK(gantry_upload_write(NULL, small, 1, NULL) == GANTRY_RESULT_NULL_PARAMETER, "NULL upload");
    CHECK(gantry_delete_object(c, bucket, "obj-1", NULL) == GANTRY_RESULT_OK, "delete");
    CHECK(gantry_head_object(c, bucket, "obj-1", NULL, NULL) == GANTRY_RESULT_NOT_FOUND, "deleted");

    gantry_client *bad = make_client(endpoint, "wrong-secret");
    err = NULL;
    CHECK(gantry_put_buffer(bad, bucket, "k", small, 4, &err) == GANTRY_RESULT_ACCESS_DENIED, "bad secret");
    CHECK(gantry_error_http_status(err) == 403, "403");
    gantry_error_free(err);
    gantry_client_free(bad);

    /* An aborted upload leaves no object. */
    gantry_upload *up = NULL;
    unsigned char *big = pattern(2 * PART + 3, 5);
    gantry_upload_new(c, bucket, "aborted", &up, NULL);
    CHECK(gantry_upload_write(up, big, 2 * PART + 3, NULL) == GANTRY_RESULT_OK, "write before abort");
    CHECK(gantry_upload_abort(up, NULL) == GANTRY_RESULT_OK, "abort");
    gantry_upload_free(up);
    CHECK(gantry_head_object(c, bucket, "aborted", NULL, NULL) == GANTRY_RESULT_NOT_FOUND, "nothing after abort");
    free(big);
}

/* fork(): the parent's client reports GANTRY_RESULT_FORKED in the child (never hangs); the
 * child's own client works. The child reports through a pipe and ends with SIGKILL: memory that
 * only the parent's worker threads referenced looks lost to valgrind's exit-time leak check in
 * the child, where those threads do not exist. */
static void test_fork(gantry_client *parent, const char *bucket, const char *endpoint) {
    int fds[2];
    CHECK(pipe(fds) == 0, "pipe");
    pid_t pid = fork();
    if (pid == 0) {
        unsigned char bad = 0;
        gantry_error *err = NULL;
        if (gantry_head_object(parent, bucket, "obj-1048576", NULL, &err) != GANTRY_RESULT_FORKED) bad |= 1;
        if (gantry_error_result(err) != GANTRY_RESULT_FORKED) bad |= 4;
        gantry_error_free(err);
        gantry_client_free(parent);
        gantry_client *mine = make_client(endpoint, "gantry-secret-key");
        uint64_t size = 0;
        if (gantry_head_object(mine, bucket, "obj-1048576", &size, NULL) != GANTRY_RESULT_OK || size != 1048576) bad |= 2;
        gantry_client_free(mine);
        if (write(fds[1], &bad, 1) != 1) bad |= 8;
        kill(getpid(), SIGKILL);
    }
    close(fds[1]);
    unsigned char result = 0xff;
    CHECK(read(fds[0], &result, 1) == 1, "the fork child reported");
    close(fds[0]);
    CHECK(result == 0, "fork child checks failed: bits %u", result);
    int status = 0;
    waitpid(pid, &status, 0);
}

/* test_async and the first metrics checks call the deprecated ABI 0.1 functions
 * (gantry_get_async, gantry_client_metrics) on purpose: they stay in the ABI, and tested, until
 * they are removed. Everything else uses their replacements. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

struct sink {
    unsigned char *buf;
    size_t cap;
    size_t got;
    int in_order;
    int done_calls;
    gantry_result done_result;
    int stop_after_first; /* body callback asks to stop */
};

static int on_body(void *user_data, const uint8_t *data, size_t len, uint64_t offset) {
    struct sink *s = user_data;
    if (offset != s->got) s->in_order = 0;
    if (s->got + len <= s->cap) memcpy(s->buf + s->got, data, len);
    s->got += len;
    return s->stop_after_first ? 1 : 0;
}

static void on_done(void *user_data, gantry_result result, const gantry_error *err) {
    struct sink *s = user_data;
    s->done_calls++;
    s->done_result = result;
    (void)err;
}

static void test_async(gantry_client *c, const char *bucket) {
    size_t len = 3 * PART + 11;
    unsigned char *want = pattern(len, 4); /* the object roundtrip() stored under this size */
    struct sink s = {malloc(len), len, 0, 1, 0, GANTRY_RESULT_INTERNAL, 0};
    gantry_request *req = NULL;
    char key[64];
    snprintf(key, sizeof key, "obj-%zu", len);
    CHECK(gantry_get_async(c, bucket, key, on_body, on_done, &s, &req, NULL) == GANTRY_RESULT_OK, "get_async");
    CHECK(gantry_request_wait(req, NULL) == GANTRY_RESULT_OK, "wait");
    CHECK(gantry_request_wait(req, NULL) == GANTRY_RESULT_OK, "wait again");
    CHECK(s.done_calls == 1 && s.done_result == GANTRY_RESULT_OK, "done once with OK (%d)", s.done_calls);
    CHECK(s.got == len && s.in_order && memcmp(s.buf, want, len) == 0, "async bytes (%zu of %zu)", s.got, len);
    CHECK(gantry_request_cancel(req) == GANTRY_RESULT_OK, "cancel after the end is harmless");
    gantry_request_free(req);

    /* The body callback stops the request. */
    struct sink stop = {malloc(len), len, 0, 1, 0, GANTRY_RESULT_INTERNAL, 1};
    req = NULL;
    gantry_get_async(c, bucket, key, on_body, on_done, &stop, &req, NULL);
    gantry_error *err = NULL;
    CHECK(gantry_request_wait(req, &err) == GANTRY_RESULT_CANCELLED, "stopped by the callback");
    CHECK(gantry_error_result(err) == GANTRY_RESULT_CANCELLED, "error object");
    gantry_error_free(err);
    CHECK(stop.done_calls == 1 && stop.done_result == GANTRY_RESULT_CANCELLED, "done with CANCELLED");
    CHECK(stop.got < len, "no bytes after the stop");
    gantry_request_free(req);

    /* Cancel from another thread (here: right away), and free without waiting. */
    struct sink cancel = {malloc(len), len, 0, 1, 0, GANTRY_RESULT_INTERNAL, 0};
    req = NULL;
    gantry_get_async(c, bucket, key, NULL, on_done, &cancel, &req, NULL);
    gantry_request_cancel(req);
    gantry_result r = gantry_request_wait(req, NULL);
    CHECK(r == GANTRY_RESULT_CANCELLED || r == GANTRY_RESULT_OK, "cancelled (or already done): %d", r);
    gantry_request_free(req);
    CHECK(cancel.done_calls == 1, "done exactly once");

    /* Errors arrive through done and wait. */
    struct sink missing = {NULL, 0, 0, 1, 0, GANTRY_RESULT_INTERNAL, 0};
    req = NULL;
    gantry_get_async(c, bucket, "missing", on_body, on_done, &missing, &req, NULL);
    err = NULL;
    CHECK(gantry_request_wait(req, &err) == GANTRY_RESULT_NOT_FOUND, "missing via async");
    CHECK(gantry_error_http_status(err) == 404, "status through wait");
    gantry_error_free(err);
    gantry_request_free(req);
    CHECK(missing.done_result == GANTRY_RESULT_NOT_FOUND, "done saw NOT_FOUND");
    CHECK(gantry_get_async(c, bucket, "k", NULL, NULL, NULL, NULL, NULL) == GANTRY_RESULT_NULL_PARAMETER, "NULL out_request");
    gantry_request_free(NULL);
    CHECK(gantry_request_cancel(NULL) == GANTRY_RESULT_NULL_PARAMETER, "cancel NULL");
    free(s.buf);
    free(stop.buf);
    free(cancel.buf);
    free(want);
}

static void test_list_and_metrics(gantry_client *c) {
    const char *bucket = "clist";
    CHECK(gantry_create_bucket(c, bucket, NULL) == GANTRY_RESULT_OK, "create list bucket");
    unsigned char byte = 7;
    for (int i = 0; i < 12; i++) {
        char key[32];
        snprintf(key, sizeof key, "p/%02d", i);
        CHECK(gantry_put_buffer(c, bucket, key, &byte, (size_t)(i % 2), NULL) == GANTRY_RESULT_OK, "put %s", key);
    }
    gantry_put_buffer(c, bucket, "other", &byte, 1, NULL);
    char *token = NULL;
    int pages = 0, seen = 0;
    do {
        gantry_list_page *page = NULL;
        CHECK(gantry_list_objects(c, bucket, "p/", token, 5, &page, NULL) == GANTRY_RESULT_OK, "list page %d", pages);
        free(token);
        token = NULL;
        for (size_t i = 0; i < gantry_list_page_count(page); i++, seen++) {
            char want[32];
            snprintf(want, sizeof want, "p/%02d", seen);
            CHECK(strcmp(gantry_list_page_key(page, i), want) == 0, "key %s vs %s", gantry_list_page_key(page, i), want);
            CHECK(gantry_list_page_size(page, i) == (uint64_t)(seen % 2), "size of %s", want);
        }
        CHECK(gantry_list_page_key(page, 99) == NULL, "out of range key");
        if (gantry_list_page_next_token(page)) token = strdup(gantry_list_page_next_token(page));
        gantry_list_page_free(page);
        pages++;
    } while (token && pages < 10);
    CHECK(pages == 3 && seen == 12, "pages %d, keys %d", pages, seen);
    gantry_list_page_free(NULL);
    CHECK(gantry_list_objects(c, bucket, NULL, NULL, 0, NULL, NULL) == GANTRY_RESULT_NULL_PARAMETER, "NULL out_page");

    gantry_metrics m = {0};
    CHECK(gantry_client_metrics(c, &m, NULL) == GANTRY_RESULT_OK, "metrics");
    CHECK(m.requests > 20 && m.bytes_uploaded > 0 && m.bytes_downloaded > 0 && m.connections_opened > 0,
          "metrics count the work: %llu requests", (unsigned long long)m.requests);
    CHECK(gantry_client_metrics(c, NULL, NULL) == GANTRY_RESULT_NULL_PARAMETER, "NULL metrics out");
}

#pragma GCC diagnostic pop

/* ---- ABI 0.2: *_start requests, streams with a caller-opened window, owned writes,
 * upload cancel, size-prefixed metrics ---- */

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

struct done_rec {
    int calls;
    gantry_result result;
    gantry_client *client;    /* when set, done tries a blocking call (must be refused) */
    gantry_result blocking;   /* what that call returned */
};

static void rec_done(void *user_data, gantry_result result, const gantry_error *err) {
    struct done_rec *d = user_data;
    (void)err;
    if (d->client) d->blocking = gantry_head_object(d->client, "ctests", "obj-1", NULL, NULL);
    __atomic_add_fetch(&d->calls, 1, __ATOMIC_SEQ_CST);
    d->result = result;
}

/* A done callback that waits on and frees its own request: the wait is refused (it would wait
 * for itself) and the free lets go without waiting, so neither deadlocks; the request ends on
 * its own (valgrind and ASan check nothing is touched after, nor leaked). */
struct self_free {
    gantry_request *req; /* stored by the test once the start call returned */
    int done;
    gantry_result waited;
};

static void free_self_done(void *user_data, gantry_result result, const gantry_error *err) {
    struct self_free *f = user_data;
    gantry_request *req = NULL;
    (void)result;
    (void)err;
    for (int i = 0; i < 5000 && !(req = __atomic_load_n(&f->req, __ATOMIC_SEQ_CST)); i++) sleep_ms(1);
    f->waited = gantry_request_wait(req, NULL);
    gantry_request_free(req);
    __atomic_store_n(&f->done, 1, __ATOMIC_SEQ_CST);
}

static int wait_done(struct self_free *f) {
    for (int i = 0; i < 4000 && !__atomic_load_n(&f->done, __ATOMIC_SEQ_CST); i++) sleep_ms(5);
    return __atomic_load_n(&f->done, __ATOMIC_SEQ_CST);
}

static void test_free_from_own_callback(gantry_client *c, const char *bucket) {
    struct self_free w = {NULL, 0, GANTRY_RESULT_OK};
    gantry_request *req = NULL;
    CHECK(gantry_head_object_start(c, bucket, "missing", free_self_done, &w, &req, NULL) == GANTRY_RESULT_OK, "start");
    __atomic_store_n(&w.req, req, __ATOMIC_SEQ_CST);
    CHECK(wait_done(&w), "a worker callback freeing its own request returned");
    CHECK(w.waited == GANTRY_RESULT_INVALID_STATE, "wait from a worker callback refused (%d)", w.waited);

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    struct self_free t = {NULL, 0, GANTRY_RESULT_OK};
    req = NULL;
    CHECK(gantry_get_async(c, bucket, "missing", NULL, free_self_done, &t, &req, NULL) == GANTRY_RESULT_OK, "get_async");
#pragma GCC diagnostic pop
    __atomic_store_n(&t.req, req, __ATOMIC_SEQ_CST);
    CHECK(wait_done(&t), "a request-thread callback freeing its own request returned");
    CHECK(t.waited == GANTRY_RESULT_INVALID_STATE, "wait on itself refused (%d)", t.waited);
}

/* test_start also exercises the get start calls gantry_get_start deprecated (they must keep
 * working until they are removed). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static void test_start(gantry_client *c, const char *bucket, const char *dir) {
    size_t len = 3 * PART + 11;
    unsigned char *want = pattern(len, 4);
    char key[64], path[512];
    snprintf(key, sizeof key, "obj-%zu", len);
    gantry_request *req = NULL;
    uint64_t size = 0;

    /* Into caller memory, on the workers. */
    unsigned char *buf = malloc(len);
    struct done_rec d = {0, GANTRY_RESULT_INTERNAL, NULL, GANTRY_RESULT_OK};
    CHECK(gantry_get_into_start(c, bucket, key, buf, len, rec_done, &d, &req, NULL) == GANTRY_RESULT_OK, "get_into_start");
    CHECK(gantry_request_wait(req, NULL) == GANTRY_RESULT_OK, "wait get_into_start");
    CHECK(d.calls == 1 && d.result == GANTRY_RESULT_OK, "done once (%d)", d.calls);
    CHECK(gantry_request_size(req, &size, NULL) == GANTRY_RESULT_OK && size == len, "size %llu", (unsigned long long)size);
    CHECK(memcmp(buf, want, len) == 0, "get_into_start bytes");
    gantry_request_free(req);

    /* A range into memory. */
    memset(buf, 0, len);
    CHECK(gantry_get_range_into_start(c, bucket, key, PART - 2, 5, buf, len, NULL, NULL, &req, NULL) == GANTRY_RESULT_OK, "range start");
    CHECK(gantry_request_wait(req, NULL) == GANTRY_RESULT_OK, "range wait");
    gantry_request_size(req, &size, NULL);
    CHECK(size == 5 && memcmp(buf, want + PART - 2, 5) == 0, "range bytes (%llu)", (unsigned long long)size);
    gantry_request_free(req);

    /* File down, file up, buffer up (freed right after the wait: valgrind sees any late read). */
    snprintf(path, sizeof path, "%s/start-down", dir);
    CHECK(gantry_get_to_file_start(c, bucket, key, path, NULL, NULL, &req, NULL) == GANTRY_RESULT_OK, "to_file start");
    CHECK(gantry_request_wait(req, NULL) == GANTRY_RESULT_OK, "to_file wait");
    gantry_request_free(req);
    CHECK(gantry_put_file_start(c, bucket, "start-file", path, NULL, NULL, &req, NULL) == GANTRY_RESULT_OK, "put_file start");
    CHECK(gantry_request_wait(req, NULL) == GANTRY_RESULT_OK, "put_file wait");
    gantry_request_size(req, &size, NULL);
    CHECK(size == len, "put_file size %llu", (unsigned long long)size);
    gantry_request_free(req);
    unsigned char *up = pattern(len, 9);
    CHECK(gantry_put_buffer_start(c, bucket, "start-buf", up, len, NULL, NULL, &req, NULL) == GANTRY_RESULT_OK, "put_buffer start");
    CHECK(gantry_request_wait(req, NULL) == GANTRY_RESULT_OK, "put_buffer wait");
    gantry_request_free(req);
    CHECK(gantry_get_into(c, bucket, "start-buf", buf, len, &size, NULL) == GANTRY_RESULT_OK && memcmp(buf, up, len) == 0,
          "put_buffer_start bytes");
    free(up);
    CHECK(gantry_get_into(c, bucket, "start-file", buf, len, &size, NULL) == GANTRY_RESULT_OK && memcmp(buf, want, len) == 0,
          "file round trip bytes");

    /* Head and delete, with a done callback that tries a blocking call: refused, not deadlocked. */
    struct done_rec hd = {0, GANTRY_RESULT_INTERNAL, c, GANTRY_RESULT_OK};
    CHECK(gantry_head_object_start(c, bucket, "start-file", rec_done, &hd, &req, NULL) == GANTRY_RESULT_OK, "head start");
    CHECK(gantry_request_wait(req, NULL) == GANTRY_RESULT_OK, "head wait");
    gantry_request_size(req, &size, NULL);
    CHECK(size == len, "head size");
    CHECK(hd.blocking == GANTRY_RESULT_INVALID_STATE, "blocking call from a worker callback refused (%d)", hd.blocking);
    gantry_request_free(req);
    CHECK(gantry_delete_object_start(c, bucket, "start-file", NULL, NULL, &req, NULL) == GANTRY_RESULT_OK, "delete start");
    CHECK(gantry_request_wait(req, NULL) == GANTRY_RESULT_OK, "delete wait");
    gantry_request_free(req);
    gantry_error *err = NULL;
    CHECK(gantry_head_object_start(c, bucket, "start-file", NULL, NULL, &req, NULL) == GANTRY_RESULT_OK, "head start 2");
    CHECK(gantry_request_wait(req, &err) == GANTRY_RESULT_NOT_FOUND && gantry_error_http_status(err) == 404, "deleted: 404");
    gantry_error_free(err);
    CHECK(gantry_request_size(req, &size, NULL) == GANTRY_RESULT_OK, "size of a failed request is readable");
    gantry_request_free(req);

    /* Cancel a download into memory at once, then free the buffer right after the wait. */
    unsigned char *victim = malloc(len);
    struct done_rec cd = {0, GANTRY_RESULT_INTERNAL, NULL, GANTRY_RESULT_OK};
    CHECK(gantry_get_into_start(c, bucket, key, victim, len, rec_done, &cd, &req, NULL) == GANTRY_RESULT_OK, "start victim");
    CHECK(gantry_request_cancel(req) == GANTRY_RESULT_OK, "cancel");
    gantry_result r = gantry_request_wait(req, NULL);
    CHECK(r == GANTRY_RESULT_CANCELLED || r == GANTRY_RESULT_OK, "cancelled: %d", r);
    free(victim);
    CHECK(cd.calls == 1 && cd.result == r, "done once with the wait's result");
    gantry_request_free(req);

    test_free_from_own_callback(c, bucket);

    /* Misuse. */
    CHECK(gantry_get_into_start(c, bucket, key, buf, len, NULL, NULL, NULL, NULL) == GANTRY_RESULT_NULL_PARAMETER, "NULL out_request");
    CHECK(gantry_get_into_start(NULL, bucket, key, buf, len, NULL, NULL, &req, NULL) == GANTRY_RESULT_NULL_PARAMETER, "NULL client");
    CHECK(gantry_put_buffer_start(c, bucket, "k", NULL, 3, NULL, NULL, &req, NULL) == GANTRY_RESULT_NULL_PARAMETER, "NULL data");
    CHECK(gantry_request_size(NULL, &size, NULL) == GANTRY_RESULT_NULL_PARAMETER, "size of NULL");
    CHECK(gantry_request_open_window(NULL, 1) == GANTRY_RESULT_NULL_PARAMETER, "window of NULL");
    free(buf);
    free(want);
}
#pragma GCC diagnostic pop

struct kept {
    gantry_chunk *chunk;
    const uint8_t *data;
    size_t len;
    uint64_t offset;
};

struct stream_sink {
    unsigned char *buf;
    uint64_t start, got, window_total;
    int in_order, over_window, stop_at_first;
    struct kept kept[8];
    int nkept;
    struct done_rec done;
};

static void sink_done(void *user_data, gantry_result result, const gantry_error *err) {
    struct stream_sink *s = user_data;
    rec_done(&s->done, result, err);
}

static int on_chunk(void *user_data, const uint8_t *data, size_t len, uint64_t offset, const gantry_chunk *chunk) {
    struct stream_sink *s = user_data;
    uint64_t got = __atomic_load_n(&s->got, __ATOMIC_SEQ_CST);
    if (offset != s->start + got) s->in_order = 0;
    memcpy(s->buf + got, data, len);
    if (got + len > __atomic_load_n(&s->window_total, __ATOMIC_SEQ_CST)) s->over_window = 1;
    if (s->nkept < 8) s->kept[s->nkept++] = (struct kept){gantry_chunk_retain(chunk), data, len, offset};
    __atomic_store_n(&s->got, got + len, __ATOMIC_SEQ_CST);
    return s->stop_at_first;
}

static int wait_for_bytes(struct stream_sink *s, uint64_t n) {
    for (int i = 0; i < 2000 && __atomic_load_n(&s->got, __ATOMIC_SEQ_CST) < n; i++) sleep_ms(5);
    return __atomic_load_n(&s->got, __ATOMIC_SEQ_CST) == n;
}

static void test_stream_window(gantry_client *c, const char *bucket) {
    size_t len = 3 * PART + 11;
    unsigned char *want = pattern(len, 4);
    char key[64];
    snprintf(key, sizeof key, "obj-%zu", len);
    struct stream_sink s;
    memset(&s, 0, sizeof s);
    s.buf = malloc(len);
    s.in_order = 1;
    s.window_total = 1u << 20;
    gantry_request *req = NULL;
    CHECK(gantry_get_stream_start(c, bucket, key, 0, UINT64_MAX, s.window_total, on_chunk, sink_done, &s, &req, NULL) ==
              GANTRY_RESULT_OK, "stream start");
    uint64_t size = 0;
    /* The window holds the stream: exactly the opened bytes arrive, then nothing. */
    CHECK(wait_for_bytes(&s, 1u << 20), "first window delivered (%llu)", (unsigned long long)s.got);
    sleep_ms(100);
    CHECK(__atomic_load_n(&s.got, __ATOMIC_SEQ_CST) == (1u << 20), "nothing past the window");
    CHECK(gantry_request_size(req, &size, NULL) == GANTRY_RESULT_INVALID_STATE, "size while running");
    for (uint64_t opened = 1u << 20; opened < len;) {
        uint64_t step = 3u << 20;
        __atomic_store_n(&s.window_total, opened + step, __ATOMIC_SEQ_CST);
        CHECK(gantry_request_open_window(req, step) == GANTRY_RESULT_OK, "open window");
        opened += step;
        CHECK(wait_for_bytes(&s, opened < len ? opened : len), "window to %llu", (unsigned long long)opened);
    }
    CHECK(gantry_request_wait(req, NULL) == GANTRY_RESULT_OK, "stream wait");
    gantry_request_size(req, &size, NULL);
    CHECK(size == len && s.got == len && s.in_order && !s.over_window && memcmp(s.buf, want, len) == 0,
          "stream bytes: %llu of %zu, order %d, over %d", (unsigned long long)s.got, len, s.in_order, s.over_window);
    CHECK(s.done.calls == 1 && s.done.result == GANTRY_RESULT_OK, "stream done once");
    gantry_request_free(req);
    /* Retained chunks outlive their callback and the request. */
    for (int i = 0; i < s.nkept; i++) {
        CHECK(s.kept[i].chunk != NULL && memcmp(s.kept[i].data, want + s.kept[i].offset, s.kept[i].len) == 0, "kept chunk %d", i);
        gantry_chunk_release(s.kept[i].chunk);
    }
    CHECK(s.nkept > 0, "chunks were kept");
    gantry_chunk_release(NULL);
    CHECK(gantry_chunk_retain(NULL) == NULL, "retain NULL");

    /* A range, no window limit; then a stream the chunk callback stops. */
    free(s.buf);
    memset(&s, 0, sizeof s);
    s.buf = malloc(len);
    s.in_order = 1;
    s.start = PART - 2;
    s.window_total = UINT64_MAX;
    CHECK(gantry_get_stream_start(c, bucket, key, PART - 2, 10, UINT64_MAX, on_chunk, NULL, &s, &req, NULL) == GANTRY_RESULT_OK,
          "range stream");
    CHECK(gantry_request_wait(req, NULL) == GANTRY_RESULT_OK, "range stream wait");
    CHECK(s.got == 10 && s.in_order && memcmp(s.buf, want + PART - 2, 10) == 0, "range stream bytes (%llu)", (unsigned long long)s.got);
    gantry_request_free(req);
    for (int i = 0; i < s.nkept; i++) gantry_chunk_release(s.kept[i].chunk);
    memset(s.buf, 0, len);
    s.got = 0;
    s.start = 0;
    s.nkept = 0;
    s.stop_at_first = 1;
    CHECK(gantry_get_stream_start(c, bucket, key, 0, UINT64_MAX, UINT64_MAX, on_chunk, NULL, &s, &req, NULL) == GANTRY_RESULT_OK,
          "stopped stream");
    CHECK(gantry_request_wait(req, NULL) == GANTRY_RESULT_CANCELLED, "chunk callback stops the stream");
    CHECK(s.nkept == 1, "one chunk before the stop (%d)", s.nkept);
    gantry_request_free(req);
    for (int i = 0; i < s.nkept; i++) gantry_chunk_release(s.kept[i].chunk);
    s.nkept = 0;

    /* A closed window and a free: cancels, never hangs. */
    CHECK(gantry_get_stream_start(c, bucket, key, 0, UINT64_MAX, 0, on_chunk, NULL, &s, &req, NULL) == GANTRY_RESULT_OK, "closed");
    sleep_ms(20);
    gantry_request_free(req);
    for (int i = 0; i < s.nkept; i++) gantry_chunk_release(s.kept[i].chunk);
    CHECK(gantry_get_stream_start(c, bucket, key, 0, 0, 1, on_chunk, NULL, &s, &req, NULL) == GANTRY_RESULT_INVALID_ARGUMENT, "length 0");
    free(s.buf);
    free(want);
}

struct releases {
    int count;
    const uint8_t *last;
};

static void on_release(void *user_data, const uint8_t *data) {
    struct releases *r = user_data;
    r->last = data;
    __atomic_add_fetch(&r->count, 1, __ATOMIC_SEQ_CST);
}

static void *cancel_later(void *upload) {
    sleep_ms(30);
    gantry_upload_cancel(upload);
    return NULL;
}

static void test_upload_owned_and_cancel(gantry_client *c, const char *bucket) {
    size_t len = 2 * PART + 7;
    unsigned char *data = pattern(len, 12);
    struct releases rel = {0, NULL};
    gantry_upload *up = NULL;
    CHECK(gantry_upload_new(c, bucket, "owned", &up, NULL) == GANTRY_RESULT_OK, "upload_new");
    /* One whole part (sent without a copy), then an odd remainder. */
    CHECK(gantry_upload_write_owned(up, data, PART, on_release, &rel, NULL) == GANTRY_RESULT_OK, "owned part");
    CHECK(gantry_upload_write_owned(up, data + PART, len - PART, on_release, &rel, NULL) == GANTRY_RESULT_OK, "owned rest");
    CHECK(gantry_upload_complete(up, NULL) == GANTRY_RESULT_OK, "complete owned");
    gantry_upload_free(up);
    for (int i = 0; i < 200 && __atomic_load_n(&rel.count, __ATOMIC_SEQ_CST) < 2; i++) sleep_ms(5);
    CHECK(rel.count == 2, "each owned write released once (%d)", rel.count);
    unsigned char *back = malloc(len);
    uint64_t size = 0;
    CHECK(gantry_get_into(c, bucket, "owned", back, len, &size, NULL) == GANTRY_RESULT_OK && size == len && memcmp(back, data, len) == 0,
          "owned upload bytes");
    CHECK(gantry_upload_write_owned(NULL, data, 1, on_release, &rel, NULL) == GANTRY_RESULT_NULL_PARAMETER, "NULL upload");
    CHECK(rel.count == 3 && rel.last == data, "released even when refused");

    /* Cancelled before any write: the upload is aborted and every call says CANCELLED. */
    CHECK(gantry_upload_new(c, bucket, "cancelled", &up, NULL) == GANTRY_RESULT_OK, "upload_new 2");
    CHECK(gantry_upload_cancel(up) == GANTRY_RESULT_OK, "cancel");
    CHECK(gantry_upload_write(up, data, 10, NULL) == GANTRY_RESULT_CANCELLED, "write after cancel");
    CHECK(gantry_upload_complete(up, NULL) == GANTRY_RESULT_CANCELLED, "complete after cancel");
    gantry_upload_free(up);
    CHECK(gantry_upload_cancel(NULL) == GANTRY_RESULT_NULL_PARAMETER, "cancel NULL");

    /* Cancelled from another thread while this one keeps writing. */
    CHECK(gantry_upload_new(c, bucket, "cancelled", &up, NULL) == GANTRY_RESULT_OK, "upload_new 3");
    pthread_t t;
    pthread_create(&t, NULL, cancel_later, up);
    gantry_result r = GANTRY_RESULT_OK;
    int writes = 0;
    for (; writes < 4000 && r == GANTRY_RESULT_OK; writes++) r = gantry_upload_write(up, data, PART, NULL);
    pthread_join(t, NULL);
    CHECK(r == GANTRY_RESULT_CANCELLED, "a write saw the cancel (%d after %d writes)", r, writes);
    CHECK(gantry_upload_write(up, data, 1, NULL) == GANTRY_RESULT_CANCELLED, "and every later one");
    gantry_upload_free(up);
    CHECK(gantry_head_object(c, bucket, "cancelled", NULL, NULL) == GANTRY_RESULT_NOT_FOUND, "no object after a cancel");
    free(back);
    free(data);
}

static void test_metrics_ex(gantry_client *c) {
    gantry_metrics_ex m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    CHECK(gantry_client_metrics_ex(c, &m, NULL) == GANTRY_RESULT_OK, "metrics_ex");
    CHECK(m.struct_size == sizeof m && m.requests > 20 && m.bytes_downloaded > 0 && m.lane_count >= 1,
          "metrics_ex filled: size %llu, %llu requests", (unsigned long long)m.struct_size, (unsigned long long)m.requests);
    CHECK(m.memory_peak_bytes > 0 && m.memory_peak_bytes <= (64u << 20), "memory peak %llu within the limit",
          (unsigned long long)m.memory_peak_bytes);
    /* A program built against a shorter struct: only its fields are written. */
    memset(&m, 0xab, sizeof m);
    m.struct_size = offsetof(gantry_metrics_ex, bytes_uploaded);
    CHECK(gantry_client_metrics_ex(c, &m, NULL) == GANTRY_RESULT_OK, "short struct");
    CHECK(m.struct_size == offsetof(gantry_metrics_ex, bytes_uploaded) && m.bytes_uploaded == 0xababababababababull,
          "fields past struct_size untouched");
    m.struct_size = 0;
    CHECK(gantry_client_metrics_ex(c, &m, NULL) == GANTRY_RESULT_INVALID_ARGUMENT, "struct_size unset");
    CHECK(gantry_client_metrics_ex(c, NULL, NULL) == GANTRY_RESULT_NULL_PARAMETER, "NULL out");
    gantry_lane_metrics lane;
    memset(&lane, 0, sizeof lane);
    lane.struct_size = sizeof lane;
    CHECK(gantry_client_lane_metrics(c, 0, &lane, NULL) == GANTRY_RESULT_OK, "lane 0");
    CHECK(strcmp(lane.name, "default") == 0 && lane.bytes_downloaded > 0 && lane.connections_opened > 0, "lane 0 counters (%s)",
          lane.name);
    CHECK(gantry_client_lane_metrics(c, 99, &lane, NULL) == GANTRY_RESULT_INVALID_ARGUMENT, "lane out of range");
}

/* gantry_get_start / gantry_get with gantry_get_options and each destination. */
static void test_get_options(gantry_client *c, const char *bucket, const char *dir) {
    size_t len = 3 * PART + 11;
    unsigned char *want = pattern(len, 4);
    char key[64], path[512];
    snprintf(key, sizeof key, "obj-%zu", len);
    gantry_request *req = NULL;
    gantry_error *err = NULL;
    uint64_t size = 0;
    unsigned char *buf = malloc(len);
    gantry_get_destination into = {GANTRY_GET_DESTINATION_BUFFER, buf, len, NULL};

    /* Defaults: init fills them, and NULL options are the same. */
    gantry_get_options o;
    memset(&o, 0xab, sizeof o);
    CHECK(gantry_get_options_init(&o) == GANTRY_RESULT_OK, "options_init");
    CHECK(o.struct_size == sizeof o && !o.has_range && o.if_match == NULL && o.if_none_match == NULL &&
              o.version_id == NULL && o.checksum == GANTRY_DOWNLOAD_CHECKSUM_FROM_CONFIG && o.part_size_bytes == 0,
          "defaults");
    CHECK(gantry_get_options_init(NULL) == GANTRY_RESULT_NULL_PARAMETER, "init NULL");
    struct done_rec d = {0, GANTRY_RESULT_INTERNAL, NULL, GANTRY_RESULT_OK};
    CHECK(gantry_get_start(c, bucket, key, NULL, &into, rec_done, &d, &req, NULL) == GANTRY_RESULT_OK, "NULL options");
    CHECK(gantry_request_wait(req, NULL) == GANTRY_RESULT_OK, "wait NULL options");
    CHECK(d.calls == 1 && d.result == GANTRY_RESULT_OK, "done once (%d)", d.calls);
    CHECK(gantry_request_size(req, &size, NULL) == GANTRY_RESULT_OK && size == len, "size %llu", (unsigned long long)size);
    CHECK(memcmp(buf, want, len) == 0, "NULL options bytes");
    gantry_request_free(req);
    memset(buf, 0, len);
    o.checksum = GANTRY_DOWNLOAD_CHECKSUM_VERIFY;
    CHECK(gantry_get(c, bucket, key, &o, &into, &size, NULL) == GANTRY_RESULT_OK && size == len, "blocking, verify");
    CHECK(memcmp(buf, want, len) == 0, "blocking bytes");

    /* A range with a small part size into a buffer: several parts, bytes at the buffer's start. */
    memset(buf, 0, len);
    gantry_get_options_init(&o);
    o.has_range = true;
    o.range_start = PART - 100;
    o.range_end = PART - 100 + (3u << 20) + 7;
    o.part_size_bytes = 1u << 20;
    CHECK(gantry_get_start(c, bucket, key, &o, &into, NULL, NULL, &req, NULL) == GANTRY_RESULT_OK, "range start");
    CHECK(gantry_request_wait(req, NULL) == GANTRY_RESULT_OK, "range wait");
    gantry_request_size(req, &size, NULL);
    CHECK(size == (3u << 20) + 7 && memcmp(buf, want + PART - 100, (size_t)size) == 0, "range bytes (%llu)",
          (unsigned long long)size);
    gantry_request_free(req);
    /* Cut at the end of the object; an empty range is refused before any request. */
    o.range_start = len - 3;
    o.range_end = len + 100;
    CHECK(gantry_get(c, bucket, key, &o, &into, &size, NULL) == GANTRY_RESULT_OK && size == 3 &&
              memcmp(buf, want + len - 3, 3) == 0, "range cut at the end (%llu)", (unsigned long long)size);
    o.range_end = o.range_start;
    CHECK(gantry_get(c, bucket, key, &o, &into, NULL, NULL) == GANTRY_RESULT_INVALID_ARGUMENT, "empty range");

    /* An older, smaller struct: only the fields it holds are read (here the range), the rest
     * are defaults, whatever lies beyond in memory. */
    memset(buf, 0, len);
    o.range_start = 10;
    o.range_end = 20;
    o.if_match = "\"not-the-etag\"";
    o.checksum = (gantry_download_checksum)77;
    o.struct_size = offsetof(gantry_get_options, if_match);
    CHECK(gantry_get(c, bucket, key, &o, &into, &size, &err) == GANTRY_RESULT_OK && size == 10 &&
              memcmp(buf, want + 10, 10) == 0, "small struct: %s", err ? gantry_error_message(err) : "");
    gantry_error_free(err);
    err = NULL;
    o.struct_size = 4;
    CHECK(gantry_get(c, bucket, key, &o, &into, NULL, NULL) == GANTRY_RESULT_INVALID_ARGUMENT, "struct_size too small");
    /* A newer, larger struct: zero unknown bytes are accepted, others refused. */
    struct { gantry_get_options o; uint64_t newer; } big;
    memset(&big, 0, sizeof big);
    gantry_get_options_init(&big.o);
    big.o.struct_size = sizeof big;
    CHECK(gantry_get(c, bucket, key, &big.o, &into, &size, NULL) == GANTRY_RESULT_OK && size == len, "larger, zeros");
    big.newer = 1;
    CHECK(gantry_get(c, bucket, key, &big.o, &into, NULL, NULL) == GANTRY_RESULT_INVALID_ARGUMENT, "larger, set");
    gantry_get_options_init(&o);
    o.checksum = (gantry_download_checksum)77;
    CHECK(gantry_get(c, bucket, key, &o, &into, NULL, NULL) == GANTRY_RESULT_INVALID_ARGUMENT, "bad checksum mode");

    /* If-Match that does not match: 412 before any byte; If-None-Match with the current ETag:
     * 304 (a one-part object whose ETag is the MD5 of "hello"). */
    CHECK(gantry_put_buffer(c, bucket, "hello", (const uint8_t *)"hello", 5, NULL) == GANTRY_RESULT_OK, "put hello");
    gantry_get_options_init(&o);
    o.if_match = "\"0123456789abcdef0123456789abcdef\"";
    CHECK(gantry_get_start(c, bucket, "hello", &o, &into, NULL, NULL, &req, NULL) == GANTRY_RESULT_OK, "if_match start");
    CHECK(gantry_request_wait(req, &err) == GANTRY_RESULT_PRECONDITION_FAILED, "412 result");
    CHECK(gantry_error_result(err) == GANTRY_RESULT_PRECONDITION_FAILED && gantry_error_http_status(err) == 412 &&
              !gantry_error_retryable(err), "412 error: %s", gantry_error_message(err));
    gantry_error_free(err);
    err = NULL;
    gantry_request_free(req);
    o.if_match = "\"5d41402abc4b2a76b9719d911017c592\"";
    memset(buf, 0, len);
    CHECK(gantry_get(c, bucket, "hello", &o, &into, &size, NULL) == GANTRY_RESULT_OK && size == 5 &&
              memcmp(buf, "hello", 5) == 0, "if_match hit");
    o.if_match = NULL;
    o.if_none_match = "\"5d41402abc4b2a76b9719d911017c592\"";
    CHECK(gantry_get(c, bucket, "hello", &o, &into, NULL, &err) == GANTRY_RESULT_NOT_MODIFIED, "304 result");
    CHECK(gantry_error_http_status(err) == 304, "304 status %u", gantry_error_http_status(err));
    gantry_error_free(err);
    err = NULL;
    o.if_none_match = "\"0123456789abcdef0123456789abcdef\"";
    CHECK(gantry_get(c, bucket, "hello", &o, &into, &size, NULL) == GANTRY_RESULT_OK && size == 5, "if_none_match miss");

    /* A file destination, with and without a range. */
    snprintf(path, sizeof path, "%s/get-options-file", dir);
    gantry_get_destination file = {GANTRY_GET_DESTINATION_FILE, NULL, 0, path};
    CHECK(gantry_get_start(c, bucket, key, NULL, &file, NULL, NULL, &req, NULL) == GANTRY_RESULT_OK, "file start");
    CHECK(gantry_request_wait(req, NULL) == GANTRY_RESULT_OK, "file wait");
    gantry_request_size(req, &size, NULL);
    CHECK(size == len, "file size %llu", (unsigned long long)size);
    gantry_request_free(req);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL && fread(buf, 1, len, f) == len && memcmp(buf, want, len) == 0, "file bytes");
    if (f) fclose(f);
    gantry_get_options_init(&o);
    o.has_range = true;
    o.range_start = 1000;
    o.range_end = 1000 + PART;
    CHECK(gantry_get(c, bucket, key, &o, &file, &size, NULL) == GANTRY_RESULT_OK && size == PART, "file range");
    f = fopen(path, "rb");
    CHECK(f != NULL && fread(buf, 1, len, f) == PART && memcmp(buf, want + 1000, PART) == 0, "file range bytes");
    if (f) fclose(f);

    /* Bad destinations. */
    gantry_get_destination bad = {(gantry_get_destination_kind)9, buf, len, NULL};
    CHECK(gantry_get(c, bucket, key, NULL, &bad, NULL, NULL) == GANTRY_RESULT_INVALID_ARGUMENT, "unknown kind");
    CHECK(gantry_get(c, bucket, key, NULL, NULL, NULL, NULL) == GANTRY_RESULT_NULL_PARAMETER, "NULL destination");
    file.path = NULL;
    CHECK(gantry_get(c, bucket, key, NULL, &file, NULL, NULL) == GANTRY_RESULT_NULL_PARAMETER, "NULL path");
    gantry_get_destination small = {GANTRY_GET_DESTINATION_BUFFER, buf, 10, NULL};
    CHECK(gantry_get(c, bucket, key, NULL, &small, NULL, NULL) == GANTRY_RESULT_INVALID_ARGUMENT, "small buffer");

    free(buf);
    free(want);
}

/* gantry_get_stream_with_start and gantry_head_object_with: the options shape on streams and
 * HEADs (a range, conditions), NULL options as the plain calls. */
static void test_stream_and_head_options(gantry_client *c, const char *bucket) {
    size_t len = 3 * PART + 11;
    unsigned char *want = pattern(len, 4);
    char key[64];
    snprintf(key, sizeof key, "obj-%zu", len);
    const char *hello_etag = "\"5d41402abc4b2a76b9719d911017c592\"", *other_etag = "\"0123456789abcdef0123456789abcdef\"";
    CHECK(gantry_put_buffer(c, bucket, "hello", (const uint8_t *)"hello", 5, NULL) == GANTRY_RESULT_OK, "put hello");
    struct stream_sink s;
    memset(&s, 0, sizeof s);
    s.buf = malloc(len);
    s.in_order = 1;
    s.window_total = UINT64_MAX;
    gantry_request *req = NULL;
    gantry_error *err = NULL;
    uint64_t size = 0;

    /* A range across a part boundary, offsets from range_start. */
    gantry_get_options o;
    gantry_get_options_init(&o);
    o.has_range = true;
    o.range_start = PART - 5;
    o.range_end = PART + 5;
    s.start = PART - 5;
    CHECK(gantry_get_stream_with_start(c, bucket, key, &o, UINT64_MAX, on_chunk, sink_done, &s, &req, NULL) ==
              GANTRY_RESULT_OK, "ranged stream start");
    CHECK(gantry_request_wait(req, NULL) == GANTRY_RESULT_OK, "ranged stream wait");
    gantry_request_size(req, &size, NULL);
    CHECK(size == 10 && s.got == 10 && s.in_order && memcmp(s.buf, want + PART - 5, 10) == 0,
          "ranged stream bytes (%llu, order %d)", (unsigned long long)s.got, s.in_order);
    CHECK(s.done.calls == 1 && s.done.result == GANTRY_RESULT_OK, "ranged stream done once");
    gantry_request_free(req);
    for (int i = 0; i < s.nkept; i++) gantry_chunk_release(s.kept[i].chunk);
    free(s.buf);

    /* NULL options: the whole object, as gantry_get_stream_start. */
    memset(&s, 0, sizeof s);
    s.buf = malloc(len);
    s.in_order = 1;
    s.window_total = UINT64_MAX;
    CHECK(gantry_get_stream_with_start(c, bucket, key, NULL, UINT64_MAX, on_chunk, NULL, &s, &req, NULL) ==
              GANTRY_RESULT_OK, "NULL options stream");
    CHECK(gantry_request_wait(req, NULL) == GANTRY_RESULT_OK, "NULL options stream wait");
    CHECK(s.got == len && s.in_order && memcmp(s.buf, want, len) == 0, "whole stream bytes (%llu)", (unsigned long long)s.got);
    gantry_request_free(req);
    for (int i = 0; i < s.nkept; i++) gantry_chunk_release(s.kept[i].chunk);
    free(s.buf);

    /* If-Match of another ETag: 412, and not one chunk. */
    memset(&s, 0, sizeof s);
    s.buf = malloc(len);
    s.window_total = UINT64_MAX;
    gantry_get_options_init(&o);
    o.if_match = other_etag;
    CHECK(gantry_get_stream_with_start(c, bucket, "hello", &o, UINT64_MAX, on_chunk, NULL, &s, &req, NULL) ==
              GANTRY_RESULT_OK, "if_match stream start");
    CHECK(gantry_request_wait(req, &err) == GANTRY_RESULT_PRECONDITION_FAILED, "stream 412");
    CHECK(gantry_error_http_status(err) == 412 && s.got == 0, "412 status %u, %llu bytes", gantry_error_http_status(err),
          (unsigned long long)s.got);
    gantry_error_free(err);
    err = NULL;
    gantry_request_free(req);
    o.if_match = hello_etag;
    CHECK(gantry_get_stream_with_start(c, bucket, "hello", &o, UINT64_MAX, on_chunk, NULL, &s, &req, NULL) ==
              GANTRY_RESULT_OK, "if_match hit stream start");
    CHECK(gantry_request_wait(req, NULL) == GANTRY_RESULT_OK && s.got == 5 && memcmp(s.buf, "hello", 5) == 0,
          "if_match hit stream bytes");
    gantry_request_free(req);
    for (int i = 0; i < s.nkept; i++) gantry_chunk_release(s.kept[i].chunk);
    free(s.buf);
    o.struct_size = 4;
    CHECK(gantry_get_stream_with_start(c, bucket, key, &o, UINT64_MAX, on_chunk, NULL, &s, &req, NULL) ==
              GANTRY_RESULT_INVALID_ARGUMENT, "stream, bad struct_size");

    /* HEAD: conditions, NULL options, and what a HEAD cannot do. */
    gantry_get_options_init(&o);
    o.if_none_match = hello_etag;
    CHECK(gantry_head_object_with(c, bucket, "hello", &o, &size, &err) == GANTRY_RESULT_NOT_MODIFIED, "head 304");
    CHECK(gantry_error_http_status(err) == 304, "head 304 status %u", gantry_error_http_status(err));
    gantry_error_free(err);
    err = NULL;
    o.if_none_match = NULL;
    o.if_match = hello_etag;
    size = 0;
    CHECK(gantry_head_object_with(c, bucket, "hello", &o, &size, NULL) == GANTRY_RESULT_OK && size == 5, "head if_match hit");
    o.if_match = other_etag;
    CHECK(gantry_head_object_with_start(c, bucket, "hello", &o, NULL, NULL, &req, NULL) == GANTRY_RESULT_OK, "head start");
    CHECK(gantry_request_wait(req, NULL) == GANTRY_RESULT_PRECONDITION_FAILED, "head 412");
    gantry_request_free(req);
    size = 0;
    CHECK(gantry_head_object_with(c, bucket, key, NULL, &size, NULL) == GANTRY_RESULT_OK && size == len, "head NULL options");
    gantry_get_options_init(&o);
    o.has_range = true;
    o.range_start = 0;
    o.range_end = 10;
    CHECK(gantry_head_object_with(c, bucket, key, &o, NULL, &err) == GANTRY_RESULT_INVALID_ARGUMENT, "head with a range");
    CHECK(strstr(gantry_error_message(err), "HEAD") != NULL, "says why: %s", gantry_error_message(err));
    gantry_error_free(err);
    gantry_get_options_init(&o);
    o.part_size_bytes = 1u << 20;
    CHECK(gantry_head_object_with(c, bucket, key, &o, NULL, NULL) == GANTRY_RESULT_INVALID_ARGUMENT, "head with a part size");
    free(want);
}

/* Server-side copy (one CopyObject, then UploadPartCopy parts) and a batch delete with a
   report; bad arguments are refused. */
static void test_copy_and_delete(gantry_client *c, const char *bucket) {
    size_t len = 2 * PART + 7;
    unsigned char *data = pattern(len, 77);
    unsigned char *back = malloc(len);
    uint32_t parts = 0;
    uint64_t size = 0;
    gantry_error *err = NULL;
    CHECK(gantry_put_buffer(c, bucket, "copy-src", data, len, NULL) == GANTRY_RESULT_OK, "put copy source");
    CHECK(gantry_copy_object(c, bucket, "copy-src", bucket, "copy dst+1", &parts, &err) == GANTRY_RESULT_OK,
          "copy: %s", err ? gantry_error_message(err) : "");
    CHECK(parts == 3, "a multipart copy of 3 parts, got %u", parts);
    CHECK(gantry_get_into(c, bucket, "copy dst+1", back, len, &size, NULL) == GANTRY_RESULT_OK && size == len, "get copy");
    CHECK(memcmp(back, data, len) == 0, "copied bytes differ");
    CHECK(gantry_put_buffer(c, bucket, "small", data, 100, NULL) == GANTRY_RESULT_OK, "put small");
    CHECK(gantry_copy_object(c, bucket, "small", bucket, "small copy", NULL, NULL) == GANTRY_RESULT_OK, "small copy");
    CHECK(gantry_copy_object(c, bucket, "no-such", bucket, "x", NULL, &err) == GANTRY_RESULT_NOT_FOUND, "missing source");
    gantry_error_free(err);
    err = NULL;
    CHECK(gantry_copy_object(c, bucket, NULL, bucket, "x", NULL, NULL) == GANTRY_RESULT_NULL_PARAMETER, "NULL source key");

    const char *keys[] = {"copy-src", "copy dst+1", "small", "small copy", "never-existed"};
    gantry_delete_report *report = NULL;
    CHECK(gantry_delete_objects(c, bucket, keys, 5, &report, &err) == GANTRY_RESULT_OK, "delete_objects: %s",
          err ? gantry_error_message(err) : "");
    CHECK(gantry_delete_report_deleted(report) == 5, "5 deleted (a missing key counts)");
    CHECK(gantry_delete_report_failed_count(report) == 0, "none refused");
    CHECK(gantry_delete_report_failed_key(report, 0) == NULL, "out of range is NULL");
    gantry_delete_report_free(report);
    gantry_delete_report_free(NULL);
    CHECK(gantry_head_object(c, bucket, "small copy", NULL, NULL) == GANTRY_RESULT_NOT_FOUND, "gone");
    CHECK(gantry_delete_objects(c, bucket, NULL, 0, &report, NULL) == GANTRY_RESULT_OK, "no keys");
    CHECK(gantry_delete_report_deleted(report) == 0, "nothing deleted");
    gantry_delete_report_free(report);
    CHECK(gantry_delete_objects(c, bucket, NULL, 2, &report, NULL) == GANTRY_RESULT_NULL_PARAMETER, "NULL keys");
    CHECK(gantry_delete_objects(c, bucket, keys, 1, NULL, NULL) == GANTRY_RESULT_NULL_PARAMETER, "NULL out_report");
    free(data);
    free(back);
}

int main(int argc, char **argv) {
    const char *endpoint = getenv("GANTRY_TEST_ENDPOINT");
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    if (!endpoint) {
        fprintf(stderr, "GANTRY_TEST_ENDPOINT is not set\n");
        return 2;
    }
    test_version();
    test_config_errors();
    gantry_client *c = make_client(endpoint, "gantry-secret-key");
    const char *bucket = "ctests";
    CHECK(gantry_create_bucket(c, bucket, NULL) == GANTRY_RESULT_OK, "create bucket");
    size_t sizes[] = {0, 1, 1048576, 3 * PART + 11};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) roundtrip(c, bucket, sizes[i], (unsigned)i + 1, dir);
    test_async(c, bucket);
    test_ranges(c, bucket);
    test_list_and_metrics(c);
    test_start(c, bucket, dir);
    test_get_options(c, bucket, dir);
    test_stream_window(c, bucket);
    test_stream_and_head_options(c, bucket);
    test_upload_owned_and_cancel(c, bucket);
    test_metrics_ex(c);
    test_fork(c, bucket, endpoint);
    test_errors(c, bucket, endpoint);
    test_copy_and_delete(c, bucket);
    gantry_client_free(c);
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
