// C trampolines for the Go callbacks of gantry_get_stream_start and of the credentials
// provider: user_data carries a runtime/cgo.Handle value (an integer), converted here so Go
// never turns it into a pointer.
#include "_cgo_export.h"

static int gantry_go_chunk(void *user_data, const uint8_t *data, size_t len, uint64_t offset,
                           const gantry_chunk *chunk) {
    return goGantryChunk((uintptr_t)user_data, (uint8_t *)data, len, offset, (gantry_chunk *)chunk);
}

static void gantry_go_done(void *user_data, gantry_result result, const gantry_error *err) {
    goGantryDone((uintptr_t)user_data, result, (gantry_error *)err);
}

gantry_result gantry_go_stream_start(const gantry_client *client, const char *bucket, const char *key, uint64_t offset,
                                     uint64_t length, uint64_t window, uintptr_t handle, gantry_request **out_request,
                                     gantry_error **out_err) {
    return gantry_get_stream_start(client, bucket, key, offset, length, window, gantry_go_chunk, gantry_go_done,
                                   (void *)handle, out_request, out_err);
}

static int32_t gantry_go_credentials(void *user_data, gantry_credentials_out *out) {
    return goGantryCredentials((uintptr_t)user_data, out);
}

static void gantry_go_credentials_release(void *user_data) {
    goGantryCredentialsRelease((uintptr_t)user_data);
}

gantry_result gantry_go_set_credentials_provider(gantry_config *config, uintptr_t handle, gantry_error **out_err) {
    return gantry_config_set_credentials_provider(config, gantry_go_credentials, (void *)handle,
                                                  gantry_go_credentials_release, out_err);
}
