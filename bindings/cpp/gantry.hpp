// gantry.hpp: header-only C++17 wrapper over the gantry C ABI (include/gantry.h).
//
// Move-only RAII handles (Config, Client, Upload) free their C object exactly once; every
// failing call throws gantry::Error, which carries the result code, HTTP status, S3 error code
// and request id. Thread-safety follows the C header: a Client may be shared across threads,
// an Upload may not.
#ifndef GANTRY_HPP
#define GANTRY_HPP

#include "gantry.h"

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

namespace gantry {

/// A failed call: what(), plus the structured fields of the C error object.
class Error : public std::runtime_error {
public:
    Error(gantry_result code, std::string message, uint16_t http_status, std::string s3_code,
          std::string request_id, bool retryable)
        : std::runtime_error(std::move(message)), code_(code), http_status_(http_status),
          s3_code_(std::move(s3_code)), request_id_(std::move(request_id)), retryable_(retryable) {}

    [[nodiscard]] gantry_result code() const noexcept { return code_; }
    /// HTTP status of the server's answer, 0 when there was none.
    [[nodiscard]] uint16_t http_status() const noexcept { return http_status_; }
    /// S3 error code ("NoSuchKey", ...), empty when there was none.
    [[nodiscard]] const std::string &s3_code() const noexcept { return s3_code_; }
    [[nodiscard]] const std::string &request_id() const noexcept { return request_id_; }
    [[nodiscard]] bool retryable() const noexcept { return retryable_; }

private:
    gantry_result code_;
    uint16_t http_status_;
    std::string s3_code_;
    std::string request_id_;
    bool retryable_;
};

namespace detail {
inline std::string str(const char *s) { return s ? std::string(s) : std::string(); }

/// Throws gantry::Error for a failed result, consuming the C error object. `err` is taken by
/// reference: in `check(gantry_call(..., &err), err)` the order in which the two arguments are
/// evaluated is unspecified, so a copy could be read before the call wrote it.
inline void check(gantry_result r, gantry_error *&err) {
    if (r == GANTRY_RESULT_OK) return;
    std::unique_ptr<gantry_error, void (*)(gantry_error *)> owned(err, gantry_error_free);
    throw Error(r, str(gantry_error_message(err)), gantry_error_http_status(err), str(gantry_error_s3_code(err)),
                str(gantry_error_request_id(err)), gantry_error_retryable(err));
}

template <typename T, void (*Free)(T *)>
struct Deleter {
    void operator()(T *p) const noexcept { Free(p); }
};
}  // namespace detail

/// Client settings; every knob is a string key (see gantry_config_set in gantry.h).
class Config {
public:
    Config() {
        gantry_config *raw = nullptr;
        gantry_error *err = nullptr;
        detail::check(gantry_config_new(&raw, &err), err);
        ptr_.reset(raw);
    }
    /// Sets one knob, e.g. set("part_size", "8MiB"). Returns *this for chaining.
    Config &set(const std::string &key, const std::string &value) {
        gantry_error *err = nullptr;
        detail::check(gantry_config_set(ptr_.get(), key.c_str(), value.c_str(), &err), err);
        return *this;
    }
    [[nodiscard]] const gantry_config *get() const noexcept { return ptr_.get(); }

private:
    std::unique_ptr<gantry_config, detail::Deleter<gantry_config, gantry_config_free>> ptr_;
};

/// A streaming upload of unknown length. Not thread-safe. Destroying an upload that was not
/// completed aborts it (nothing is left on the server).
class Upload {
public:
    explicit Upload(gantry_upload *raw) noexcept : ptr_(raw) {}
    void write(const void *data, size_t len) {
        gantry_error *err = nullptr;
        detail::check(gantry_upload_write(ptr_.get(), static_cast<const uint8_t *>(data), len, &err), err);
    }
    void write(const std::string &data) { write(data.data(), data.size()); }
    void complete() {
        gantry_error *err = nullptr;
        detail::check(gantry_upload_complete(ptr_.get(), &err), err);
    }
    void abort() {
        gantry_error *err = nullptr;
        detail::check(gantry_upload_abort(ptr_.get(), &err), err);
    }

private:
    std::unique_ptr<gantry_upload, detail::Deleter<gantry_upload, gantry_upload_free>> ptr_;
};

/// A client: safe to share across threads (use it through a reference or shared_ptr).
class Client {
public:
    explicit Client(const Config &config) {
        gantry_client *raw = nullptr;
        gantry_error *err = nullptr;
        detail::check(gantry_client_new(config.get(), &raw, &err), err);
        ptr_.reset(raw);
    }

    /// Downloads into caller memory; returns the object's size. Throws with
    /// GANTRY_RESULT_INVALID_ARGUMENT when the buffer is too small.
    uint64_t get_into(const std::string &bucket, const std::string &key, void *buf, size_t len) const {
        uint64_t size = 0;
        gantry_error *err = nullptr;
        detail::check(gantry_get_into(ptr_.get(), bucket.c_str(), key.c_str(), static_cast<uint8_t *>(buf), len,
                                      &size, &err),
                      err);
        return size;
    }
    /// Downloads the whole object into a string (HEAD first for the size).
    std::string get(const std::string &bucket, const std::string &key) const {
        std::string out(head_size(bucket, key), '\0');
        uint64_t n = get_into(bucket, key, out.data(), out.size());
        out.resize(static_cast<size_t>(n));
        return out;
    }
    uint64_t get_to_file(const std::string &bucket, const std::string &key, const std::string &path) const {
        uint64_t size = 0;
        gantry_error *err = nullptr;
        detail::check(gantry_get_to_file(ptr_.get(), bucket.c_str(), key.c_str(), path.c_str(), &size, &err), err);
        return size;
    }
    void put(const std::string &bucket, const std::string &key, const void *data, size_t len) const {
        gantry_error *err = nullptr;
        detail::check(gantry_put_buffer(ptr_.get(), bucket.c_str(), key.c_str(), static_cast<const uint8_t *>(data),
                                        len, &err),
                      err);
    }
    void put(const std::string &bucket, const std::string &key, const std::string &data) const {
        put(bucket, key, data.data(), data.size());
    }
    void put_file(const std::string &bucket, const std::string &key, const std::string &path) const {
        gantry_error *err = nullptr;
        detail::check(gantry_put_file(ptr_.get(), bucket.c_str(), key.c_str(), path.c_str(), &err), err);
    }
    uint64_t head_size(const std::string &bucket, const std::string &key) const {
        uint64_t size = 0;
        gantry_error *err = nullptr;
        detail::check(gantry_head_object(ptr_.get(), bucket.c_str(), key.c_str(), &size, &err), err);
        return size;
    }
    void remove(const std::string &bucket, const std::string &key) const {
        gantry_error *err = nullptr;
        detail::check(gantry_delete_object(ptr_.get(), bucket.c_str(), key.c_str(), &err), err);
    }
    void create_bucket(const std::string &bucket) const {
        gantry_error *err = nullptr;
        detail::check(gantry_create_bucket(ptr_.get(), bucket.c_str(), &err), err);
    }
    [[nodiscard]] Upload upload(const std::string &bucket, const std::string &key) const {
        gantry_upload *raw = nullptr;
        gantry_error *err = nullptr;
        detail::check(gantry_upload_new(ptr_.get(), bucket.c_str(), key.c_str(), &raw, &err), err);
        return Upload(raw);
    }

private:
    std::unique_ptr<gantry_client, detail::Deleter<gantry_client, gantry_client_free>> ptr_;
};

/// The library's version string ("MAJOR.MINOR.PATCH").
inline std::string version() { return gantry_version(); }

}  // namespace gantry

#endif  // GANTRY_HPP
