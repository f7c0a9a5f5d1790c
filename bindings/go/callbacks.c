// C trampolines for the Go callbacks of gantry_get_async: the request's user_data carries a
// runtime/cgo.Handle value (an integer), converted here so Go never turns it into a pointer.
#include "_cgo_export.h"

static int gantry_go_body(void *user_data, const uint8_t *data, size_t len, uint64_t offset) {
    return goGantryBody((uintptr_t)user_data, (uint8_t *)data, len, offset);
}

static void gantry_go_done(void *user_data, gantry_result result, const gantry_error *err) {
    goGantryDone((uintptr_t)user_data, result, (gantry_error *)err);
}

gantry_result gantry_go_get_async(const gantry_client *client, const char *bucket, const char *key, uintptr_t handle,
                                  gantry_request **out_request, gantry_error **out_err) {
    return gantry_get_async(client, bucket, key, gantry_go_body, gantry_go_done, (void *)handle, out_request, out_err);
}
