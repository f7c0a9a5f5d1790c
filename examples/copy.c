/* Uploads a local file to S3 and downloads it back next to it, through the C ABI.
 *   copy ENDPOINT BUCKET KEY FILE     (credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)
 * Build, after scripts/install.sh --prefix DIR (and PKG_CONFIG_PATH=DIR/lib/pkgconfig):
 *   cc -o copy examples/copy.c $(pkg-config --cflags --libs gantry) */
#include "gantry.h"

#include <stdio.h>
#include <string.h>

static int fail(const char *what, gantry_error *err) {
    fprintf(stderr, "%s: %s\n", what, gantry_error_message(err));
    gantry_error_free(err);
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s ENDPOINT BUCKET KEY FILE\n", argv[0]);
        return 2;
    }
    gantry_config *cfg = NULL;
    gantry_client *client = NULL;
    gantry_error *err = NULL;
    gantry_config_new(&cfg, NULL);
    if (gantry_config_set(cfg, "endpoint_url", argv[1], &err) != GANTRY_RESULT_OK) return fail("endpoint", err);
    if (gantry_client_new(cfg, &client, &err) != GANTRY_RESULT_OK) return fail("client", err);
    gantry_config_free(cfg);

    if (gantry_put_file(client, argv[2], argv[3], argv[4], &err) != GANTRY_RESULT_OK) return fail("upload", err);
    char back[4096];
    snprintf(back, sizeof back, "%s.back", argv[4]);
    uint64_t size = 0;
    if (gantry_get_to_file(client, argv[2], argv[3], back, &size, &err) != GANTRY_RESULT_OK) return fail("download", err);
    printf("uploaded %s and downloaded %llu bytes into %s\n", argv[4], (unsigned long long)size, back);
    gantry_client_free(client);
    return 0;
}
