/* C tests of the credentials callback (gantry_config_set_credentials_provider) against a real S3
 * server that accepts the keys gantry / gantry-secret-key (the Rust harness ffi/tests/c_api.rs
 * starts it and passes GANTRY_TEST_ENDPOINT). Built with -Wall -Wextra -Werror -Wpedantic and
 * run under valgrind: the providers' user_data lives on the heap and is freed by release_fn,
 * and every string handed to gantry_credentials_out_set is freed as soon as the call returns,
 * so a missed release, a double release or a string the library kept shows up there. */
#include "gantry.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures = 0;
static int checks = 0;

#define CHECK(cond, ...)                                                                 \
    do {                                                                                 \
        checks++;                                                                        \
        if (!(cond)) {                                                                   \
            failures++;                                                                  \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond);     \
            fprintf(stderr, __VA_ARGS__);                                                \
            fprintf(stderr, "\n");                                                       \
        }                                                                                \
    } while (0)

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* What a test reads after the provider is gone: the provider's own state (user_data) is
 * malloc'd and freed by release, the way a program hands over ownership. */
struct stats {
    int calls;
    int releases;
    int overlapped;
    int other_thread;            /* every call ran on a thread other than the test's */
    int callback_errors;         /* gantry calls inside the callback that failed */
    gantry_result reentrant;     /* what a blocking call from inside the callback returned */
};

struct provider {
    struct stats *stats;
    pthread_t test_thread;
    gantry_client *client;       /* when set, the callback tries a blocking call on it */
    int running;
    const char *fail_with;       /* NULL: hand out the server's keys */
};

static char *copy_str(const char *s) {
    char *p = malloc(strlen(s) + 1);
    strcpy(p, s);
    return p;
}

static int32_t fetch_keys(void *user_data, gantry_credentials_out *out) {
    struct provider *p = user_data;
    if (__atomic_exchange_n(&p->running, 1, __ATOMIC_SEQ_CST)) __atomic_store_n(&p->stats->overlapped, 1, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&p->stats->calls, 1, __ATOMIC_SEQ_CST);
    if (pthread_equal(pthread_self(), p->test_thread)) p->stats->other_thread = 0;
    gantry_client *client = __atomic_load_n(&p->client, __ATOMIC_SEQ_CST);
    if (client) p->stats->reentrant = gantry_head_object(client, "ccreds", "k", NULL, NULL);
    sleep_ms(20); /* a slow source (a vault): other clients' fetches must wait, not overlap */
    int32_t rc = 0;
    if (p->fail_with) {
        if (gantry_credentials_out_fail(out, p->fail_with) != GANTRY_RESULT_OK) p->stats->callback_errors++;
        rc = 1;
    } else {
        /* Temporary-looking keys: a session token (the server does not check it) and an expiry an
         * hour away. The buffers are freed right after the call: the library copied them. */
        char *id = copy_str("gantry"), *secret = copy_str("gantry-secret-key"), *token = copy_str("session-token");
        gantry_error *err = NULL;
        gantry_result r = gantry_credentials_out_set(out, id, secret, token, (int64_t)time(NULL) + 3600, &err);
        if (r != GANTRY_RESULT_OK) {
            fprintf(stderr, "out_set: %s\n", gantry_error_message(err));
            p->stats->callback_errors++;
        }
        gantry_error_free(err);
        free(id);
        free(secret);
        free(token);
        rc = r == GANTRY_RESULT_OK ? 0 : 1;
    }
    __atomic_store_n(&p->running, 0, __ATOMIC_SEQ_CST);
    return rc;
}

static void release_provider(void *user_data) {
    struct provider *p = user_data;
    __atomic_add_fetch(&p->stats->releases, 1, __ATOMIC_SEQ_CST);
    free(p);
}

static struct provider *new_provider(struct stats *stats, const char *fail_with) {
    struct provider *p = calloc(1, sizeof *p);
    p->stats = stats;
    p->test_thread = pthread_self();
    p->fail_with = fail_with;
    return p;
}

static gantry_config *provider_config(const char *endpoint, struct provider *p) {
    gantry_config *cfg = NULL;
    CHECK(gantry_config_new(&cfg, NULL) == GANTRY_RESULT_OK, "config_new");
    CHECK(gantry_config_set(cfg, "endpoint_url", endpoint, NULL) == GANTRY_RESULT_OK, "endpoint");
    CHECK(gantry_config_set(cfg, "worker_threads", "2", NULL) == GANTRY_RESULT_OK, "threads");
    gantry_error *err = NULL;
    CHECK(gantry_config_set_credentials_provider(cfg, fetch_keys, p, release_provider, &err) == GANTRY_RESULT_OK,
          "set provider: %s", gantry_error_message(err));
    gantry_error_free(err);
    return cfg;
}

static gantry_client *client_of(const gantry_config *cfg) {
    gantry_client *client = NULL;
    gantry_error *err = NULL;
    CHECK(gantry_client_new(cfg, &client, &err) == GANTRY_RESULT_OK, "client_new: %s", gantry_error_message(err));
    gantry_error_free(err);
    return client;
}

/* release runs once the engine let go of the provider, which may be shortly after
 * gantry_client_free returned (engine threads end asynchronously). */
static int released(struct stats *s, int want) {
    for (int i = 0; i < 1000 && __atomic_load_n(&s->releases, __ATOMIC_SEQ_CST) < want; i++) sleep_ms(10);
    sleep_ms(50);
    return __atomic_load_n(&s->releases, __ATOMIC_SEQ_CST) == want;
}

struct worker_args {
    gantry_client *client;
    int ok;
};

static void *heads(void *arg) {
    struct worker_args *a = arg;
    a->ok = 1;
    for (int i = 0; i < 5; i++) a->ok &= gantry_head_object(a->client, "ccreds", "k", NULL, NULL) == GANTRY_RESULT_OK;
    return NULL;
}

/* The server's keys from the callback: one fetch serves many requests; the callback runs off the
 * caller's thread, refuses blocking gantry calls, never overlaps itself; one release at the end. */
static void test_provider_keys(const char *endpoint) {
    struct stats s = {0, 0, 0, 1, 0, GANTRY_RESULT_OK};
    struct provider *p = new_provider(&s, NULL);
    gantry_config *cfg = provider_config(endpoint, p);
    gantry_client *c = client_of(cfg);
    __atomic_store_n(&p->client, c, __ATOMIC_SEQ_CST);
    CHECK(gantry_create_bucket(c, "ccreds", NULL) == GANTRY_RESULT_OK, "create bucket with the callback's keys");
    __atomic_store_n(&p->client, NULL, __ATOMIC_SEQ_CST);
    unsigned char byte = 42;
    for (int i = 0; i < 20; i++) {
        CHECK(gantry_put_buffer(c, "ccreds", "k", &byte, 1, NULL) == GANTRY_RESULT_OK, "put %d", i);
        uint64_t size = 0;
        CHECK(gantry_head_object(c, "ccreds", "k", &size, NULL) == GANTRY_RESULT_OK && size == 1, "head %d", i);
    }
    CHECK(s.calls == 1, "one fetch for 41 requests (%d)", s.calls);
    CHECK(s.other_thread, "the callback runs on an engine thread, not the caller's");
    CHECK(s.reentrant == GANTRY_RESULT_INVALID_STATE, "blocking call from the callback refused (%d)", s.reentrant);

    /* Two more clients from the same configuration, used at once from two threads: one fetch
     * each, never two at the same time. */
    struct worker_args a = {client_of(cfg), 0}, b = {client_of(cfg), 0};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, heads, &a);
    pthread_create(&tb, NULL, heads, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK(a.ok && b.ok, "requests of the other clients");
    CHECK(s.calls == 3, "a fetch per client (%d)", s.calls);
    CHECK(!s.overlapped, "the callback never runs concurrently with itself");
    CHECK(s.callback_errors == 0, "gantry_credentials_out_set accepted the keys");

    gantry_client_free(c);
    gantry_config_free(cfg);
    gantry_client_free(a.client);
    sleep_ms(50);
    CHECK(s.releases == 0, "not released while a client holds the provider (%d)", s.releases);
    gantry_client_free(b.client);
    CHECK(released(&s, 1), "released exactly once after the last client (%d)", s.releases);
}

struct done_rec {
    int calls;
    gantry_result result;
    int names_callback;
};

static void on_done(void *user_data, gantry_result result, const gantry_error *err) {
    struct done_rec *d = user_data;
    d->result = result;
    d->names_callback = err && strstr(gantry_error_message(err), "credentials callback: vault is sealed") != NULL;
    __atomic_add_fetch(&d->calls, 1, __ATOMIC_SEQ_CST);
}

/* A callback that fails: requests fail with GANTRY_RESULT_CREDENTIALS, final (not retried), and
 * the message names the callback and carries its reason. */
static void test_provider_error(const char *endpoint) {
    struct stats s = {0, 0, 0, 1, 0, GANTRY_RESULT_OK};
    gantry_config *cfg = provider_config(endpoint, new_provider(&s, "vault is sealed"));
    gantry_client *c = client_of(cfg);
    gantry_config_free(cfg);
    gantry_error *err = NULL;
    unsigned char byte = 1;
    CHECK(gantry_put_buffer(c, "ccreds", "never", &byte, 1, &err) == GANTRY_RESULT_CREDENTIALS, "put fails");
    CHECK(gantry_error_result(err) == GANTRY_RESULT_CREDENTIALS, "error code");
    const char *msg = gantry_error_message(err);
    CHECK(strstr(msg, "credentials callback: vault is sealed") != NULL, "message names the callback: %s", msg);
    CHECK(!gantry_error_retryable(err), "a failed fetch is final");
    CHECK(gantry_error_http_status(err) == 0, "no HTTP answer");
    gantry_error_free(err);

    struct done_rec d = {0, GANTRY_RESULT_OK, 0};
    gantry_request *req = NULL;
    CHECK(gantry_head_object_start(c, "ccreds", "k", on_done, &d, &req, NULL) == GANTRY_RESULT_OK, "head start");
    CHECK(gantry_request_wait(req, NULL) == GANTRY_RESULT_CREDENTIALS, "async request fails the same way");
    CHECK(d.calls == 1 && d.result == GANTRY_RESULT_CREDENTIALS && d.names_callback, "done saw it");
    gantry_request_free(req);
    CHECK(s.calls >= 1 && s.callback_errors == 0, "the callback was asked (%d)", s.calls);
    gantry_client_free(c);
    CHECK(released(&s, 1), "released once (%d)", s.releases);
}

/* Ownership passes in every case: a refused registration, a replaced provider and a
 * configuration freed without a client each release user_data exactly once. */
static void test_release_rules(void) {
    struct stats s = {0, 0, 0, 1, 0, GANTRY_RESULT_OK};
    gantry_error *err = NULL;
    CHECK(gantry_config_set_credentials_provider(NULL, fetch_keys, new_provider(&s, NULL), release_provider, &err) ==
              GANTRY_RESULT_NULL_PARAMETER, "NULL config");
    CHECK(strstr(gantry_error_message(err), "config") != NULL, "%s", gantry_error_message(err));
    gantry_error_free(err);
    CHECK(s.releases == 1, "released when refused (%d)", s.releases);
    gantry_config *cfg = NULL;
    gantry_config_new(&cfg, NULL);
    CHECK(gantry_config_set_credentials_provider(cfg, NULL, new_provider(&s, NULL), release_provider, NULL) ==
              GANTRY_RESULT_NULL_PARAMETER, "NULL fetch");
    CHECK(s.releases == 2, "released when fetch is NULL (%d)", s.releases);
    CHECK(gantry_config_set_credentials_provider(cfg, fetch_keys, new_provider(&s, NULL), release_provider, NULL) ==
              GANTRY_RESULT_OK, "set");
    CHECK(gantry_config_set_credentials_provider(cfg, fetch_keys, new_provider(&s, NULL), release_provider, NULL) ==
              GANTRY_RESULT_OK, "set again");
    CHECK(s.releases == 3, "the replaced provider is released (%d)", s.releases);
    CHECK(gantry_config_set(cfg, "access_key_id", "gantry", NULL) == GANTRY_RESULT_OK, "explicit keys");
    CHECK(s.releases == 4, "explicit keys replace the provider (%d)", s.releases);
    CHECK(gantry_config_set_credentials_provider(cfg, fetch_keys, new_provider(&s, NULL), release_provider, NULL) ==
              GANTRY_RESULT_OK, "set after keys");
    gantry_config_free(cfg);
    CHECK(s.releases == 5, "released with a configuration that built no client (%d)", s.releases);
    CHECK(s.calls == 0, "never called without a client");

    gantry_credentials_out *none = NULL;
    CHECK(gantry_credentials_out_set(none, "a", "b", NULL, 0, NULL) == GANTRY_RESULT_NULL_PARAMETER, "NULL out");
    CHECK(gantry_credentials_out_fail(none, "x") == GANTRY_RESULT_NULL_PARAMETER, "NULL out (fail)");
}

int main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    const char *endpoint = getenv("GANTRY_TEST_ENDPOINT");
    if (!endpoint) {
        fprintf(stderr, "GANTRY_TEST_ENDPOINT is not set\n");
        return 2;
    }
    test_release_rules();
    test_provider_keys(endpoint);
    test_provider_error(endpoint);
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
