// gantry.hpp: header-only C++17 wrapper over the gantry C ABI (include/gantry.h).
//
// Move-only RAII handles (Config, Client, Upload, Request, HeldChunk) free their C object
// exactly once; every failing call throws gantry::Error, which carries the result code, HTTP
// status, S3 error code and request id. Thread-safety follows the C header: a Client and a
// Request may be shared across threads, an Upload may not (except Upload::cancel). No C++
// exception ever crosses into the library: callbacks catch everything.
#ifndef GANTRY_HPP
#define GANTRY_HPP

#include "gantry.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>
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

/// Keys a credentials provider hands to the engine (copied by the library).
struct Credentials {
    std::string access_key_id;
    std::string secret_access_key;
    /// Empty for long-term keys.
    std::string session_token;
    /// When temporary keys stop working (rounded down to the second); empty for keys that do
    /// not expire. The engine asks the provider again ahead of it, so no request waits.
    std::optional<std::chrono::system_clock::time_point> expiry;
};

/// Fetches credentials for a client (Config::credentials_provider). Throw to fail the fetch.
using CredentialsProvider = std::function<Credentials()>;

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
    /// Clients built from this configuration get their keys from `provider` (replacing any
    /// keys, profile or earlier provider; a later set() of a credential key replaces it in
    /// turn). Each client calls it on first use and again ahead of the expiry it returned
    /// (never, for keys without one), on a gantry thread of its own, never concurrently with
    /// itself: it may block (a vault, an SDK call) but must not make blocking gantry calls
    /// (they throw GANTRY_RESULT_INVALID_STATE there). An exception it throws fails the fetch:
    /// the requests waiting for the keys throw gantry::Error with GANTRY_RESULT_CREDENTIALS and
    /// a what() of "... credentials callback: <the exception's what()>". The library owns the
    /// function and destroys it once this Config and every Client built from it are gone
    /// (possibly on a gantry thread shortly after the last Client was destroyed).
    Config &credentials_provider(CredentialsProvider provider) {
        if (!provider) throw std::invalid_argument("gantry::Config::credentials_provider: empty function");
        auto *owned = new CredentialsProvider(std::move(provider));
        gantry_error *err = nullptr;
        // gantry owns `owned` now: release_provider deletes it exactly once, also on failure.
        detail::check(gantry_config_set_credentials_provider(ptr_.get(), &fetch_credentials, owned, &release_provider,
                                                             &err),
                      err);
        return *this;
    }
    [[nodiscard]] const gantry_config *get() const noexcept { return ptr_.get(); }

private:
    static int32_t fetch_credentials(void *user, gantry_credentials_out *out) noexcept {
        try {
            Credentials c = (*static_cast<CredentialsProvider *>(user))();
            int64_t expiry = 0;
            if (c.expiry) {
                using std::chrono::duration_cast;
                expiry = duration_cast<std::chrono::seconds>(c.expiry->time_since_epoch()).count();
                if (expiry <= 0) expiry = 1;  // at or before 1970: expired, not "never expires"
            }
            const char *token = c.session_token.empty() ? nullptr : c.session_token.c_str();
            gantry_error *err = nullptr;
            gantry_result r = gantry_credentials_out_set(out, c.access_key_id.c_str(), c.secret_access_key.c_str(),
                                                         token, expiry, &err);
            gantry_error_free(err);  // the refusal's reason stays in `out` and fails the fetch
            return r == GANTRY_RESULT_OK ? 0 : 1;
        } catch (const std::exception &e) {
            gantry_credentials_out_fail(out, e.what());
            return 1;
        } catch (...) {  // nothing may unwind into the library
            gantry_credentials_out_fail(out, "the provider threw an exception not derived from std::exception");
            return 1;
        }
    }
    static void release_provider(void *user) noexcept { delete static_cast<CredentialsProvider *>(user); }
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
    /// Appends `data` without copying it: the upload owns the vector until the engine sent the
    /// bytes (whole parts go straight from it), then frees it on whatever thread is done last.
    void write_owned(std::vector<uint8_t> &&data) {
        auto *owner = new std::vector<uint8_t>(std::move(data));
        gantry_error *err = nullptr;
        // gantry calls the release function exactly once, also on failure: it owns `owner` now.
        detail::check(gantry_upload_write_owned(ptr_.get(), owner->data(), owner->size(), &release_vector, owner, &err),
                      err);
    }
    /// Cancels the upload from any thread (e.g. a watchdog or a std::stop_token callback): the
    /// write or complete in progress, and every later call, throws GANTRY_RESULT_CANCELLED; the
    /// multipart upload is aborted.
    void cancel() const noexcept { gantry_upload_cancel(ptr_.get()); }

private:
    static void release_vector(void *owner, const uint8_t *) { delete static_cast<std::vector<uint8_t> *>(owner); }
    std::unique_ptr<gantry_upload, detail::Deleter<gantry_upload, gantry_upload_free>> ptr_;
};

/// A chunk of a streamed object kept past its callback without a copy (gantry_chunk_retain);
/// released when destroyed, from any thread.
class HeldChunk {
public:
    HeldChunk() noexcept = default;
    HeldChunk(gantry_chunk *raw, const uint8_t *data, size_t len, uint64_t offset) noexcept
        : ptr_(raw), data_(data), len_(len), offset_(offset) {}
    [[nodiscard]] const uint8_t *data() const noexcept { return data_; }
    [[nodiscard]] size_t size() const noexcept { return len_; }
    [[nodiscard]] uint64_t offset() const noexcept { return offset_; }

private:
    std::unique_ptr<gantry_chunk, detail::Deleter<gantry_chunk, gantry_chunk_release>> ptr_;
    const uint8_t *data_ = nullptr;
    size_t len_ = 0;
    uint64_t offset_ = 0;
};

/// A chunk lent to a stream callback: valid during the call; retain() keeps it (no copy).
struct Chunk {
    const uint8_t *data;
    size_t size;
    uint64_t offset;
    const gantry_chunk *raw;
    [[nodiscard]] HeldChunk retain() const noexcept { return HeldChunk(gantry_chunk_retain(raw), data, size, offset); }
};

/// Receives a stream's chunks in order on a client worker thread; must not block. Return
/// false to stop (the request ends with GANTRY_RESULT_CANCELLED).
using ChunkHandler = std::function<bool(const Chunk &)>;

/// An asynchronous request (*_start). Destroying it cancels it if still running and waits for
/// its end, so memory lent to it may be freed after the destructor. Thread-safe.
class Request {
public:
    Request() noexcept = default;
    Request(gantry_request *raw, std::shared_ptr<void> state) noexcept : state_(std::move(state)) { ptr_.reset(raw); }
    Request(Request &&) noexcept = default;
    Request &operator=(Request &&other) noexcept {
        ptr_ = std::move(other.ptr_);  // frees (cancels, waits for) ours before taking theirs
        state_ = std::move(other.state_);
        return *this;
    }
    ~Request() { ptr_.reset(); }  // before state_: callbacks may still use it until the end

    /// Blocks until the request ended; throws its error. Returns its size result.
    uint64_t wait() const {
        gantry_error *err = nullptr;
        detail::check(gantry_request_wait(ptr_.get(), &err), err);
        uint64_t size = 0;
        gantry_request_size(ptr_.get(), &size, nullptr);
        return size;
    }
    /// Asks the request to stop; returns at once. Safe from any thread and callback.
    void cancel() const noexcept { gantry_request_cancel(ptr_.get()); }
    /// Lets a stream hand `bytes` more to its handler (the caller-opened read window).
    void open_window(uint64_t bytes) const noexcept { gantry_request_open_window(ptr_.get(), bytes); }
    [[nodiscard]] gantry_request *get() const noexcept { return ptr_.get(); }

private:
    std::unique_ptr<gantry_request, detail::Deleter<gantry_request, gantry_request_free>> ptr_;
    std::shared_ptr<void> state_;
};

/// No read window: a stream hands over chunks as fast as they arrive.
inline constexpr uint64_t unlimited_window = UINT64_MAX;

/// Settings of one download (Rust's gantry::GetOptions), built with chained setters:
/// `GetOptions().range(0, 1024).if_match(etag)`. Owns its strings; the C struct it becomes is
/// read (strings copied) during the call only, so a GetOptions may be reused or destroyed as
/// soon as the call returned, also while the request it started runs.
class GetOptions {
public:
    /// Bytes [start, end) (end exclusive; cut at the end of the object).
    GetOptions &range(uint64_t start, uint64_t end) {
        has_range_ = true;
        range_start_ = start;
        range_end_ = end;
        return *this;
    }
    /// Read only if the object's ETag is this one (with its quotes); otherwise the call throws
    /// with GANTRY_RESULT_PRECONDITION_FAILED (HTTP 412).
    GetOptions &if_match(std::string etag) {
        if_match_ = std::move(etag);
        return *this;
    }
    /// Read only if the object's ETag is not this one; a match throws with
    /// GANTRY_RESULT_NOT_MODIFIED (HTTP 304).
    GetOptions &if_none_match(std::string etag) {
        if_none_match_ = std::move(etag);
        return *this;
    }
    GetOptions &version_id(std::string version) {
        version_id_ = std::move(version);
        return *this;
    }
    GetOptions &checksum(gantry_download_checksum mode) {
        checksum_ = mode;
        return *this;
    }
    /// Size of the part requests; 0 uses the client's part_size.
    GetOptions &part_size_bytes(uint64_t bytes) {
        part_size_bytes_ = bytes;
        return *this;
    }
    /// The C struct; its strings point into this object (valid while it lives unchanged).
    [[nodiscard]] gantry_get_options c_options() const noexcept {
        gantry_get_options o;
        gantry_get_options_init(&o);
        o.has_range = has_range_;
        o.range_start = range_start_;
        o.range_end = range_end_;
        o.if_match = if_match_ ? if_match_->c_str() : nullptr;
        o.if_none_match = if_none_match_ ? if_none_match_->c_str() : nullptr;
        o.version_id = version_id_ ? version_id_->c_str() : nullptr;
        o.checksum = checksum_;
        o.part_size_bytes = part_size_bytes_;
        return o;
    }

private:
    bool has_range_ = false;
    uint64_t range_start_ = 0;
    uint64_t range_end_ = 0;
    std::optional<std::string> if_match_;
    std::optional<std::string> if_none_match_;
    std::optional<std::string> version_id_;
    gantry_download_checksum checksum_ = GANTRY_DOWNLOAD_CHECKSUM_FROM_CONFIG;
    uint64_t part_size_bytes_ = 0;
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
    /// Downloads the whole object into a string, in one GET-based request: a missing key
    /// throws GANTRY_RESULT_NOT_FOUND with S3's `NoSuchKey` (a HEAD's 404 has no error code),
    /// and an object replaced meanwhile cannot be cut to a stale size. For large objects of
    /// known size, get_into() into preallocated memory avoids the string's growth copies.
    std::string get(const std::string &bucket, const std::string &key) const {
        std::string out;
        stream(bucket, key, [&out](const Chunk &c) {
            out.append(reinterpret_cast<const char *>(c.data), c.size);
            return true;
        }).wait();
        return out;
    }
    /// Downloads the whole object into the file at `path` (renamed into place on success; a
    /// failed download leaves no file there); returns the object's size.
    uint64_t download_to_file(const std::string &bucket, const std::string &key, const std::string &path) const {
        uint64_t size = 0;
        gantry_error *err = nullptr;
        detail::check(gantry_get_to_file(ptr_.get(), bucket.c_str(), key.c_str(), path.c_str(), &size, &err), err);
        return size;
    }
    /// The 0.2 name of download_to_file(), kept so existing callers build.
    [[deprecated("use download_to_file")]] uint64_t get_to_file(const std::string &bucket, const std::string &key,
                                                                const std::string &path) const {
        return download_to_file(bucket, key, path);
    }
    /// Downloads what `options` select into caller memory (a range lands at the start of
    /// `buf`, which must hold the whole object or the whole range); returns the bytes written.
    uint64_t get_into_with(const std::string &bucket, const std::string &key, const GetOptions &options, void *buf,
                           size_t len) const {
        gantry_get_destination dest{GANTRY_GET_DESTINATION_BUFFER, buf, len, nullptr};
        return run_get(bucket, key, options, dest);
    }
    /// Downloads what `options` select into the file at `path` (renamed into place on
    /// success); returns the bytes written.
    uint64_t download_to_file_with(const std::string &bucket, const std::string &key, const GetOptions &options,
                                   const std::string &path) const {
        gantry_get_destination dest{GANTRY_GET_DESTINATION_FILE, nullptr, 0, path.c_str()};
        return run_get(bucket, key, options, dest);
    }
    /// Starts get_into_with on the workers; `buf` is in use until the Request ended. wait()
    /// returns the bytes written.
    [[nodiscard]] Request get_into_with_async(const std::string &bucket, const std::string &key,
                                              const GetOptions &options, void *buf, size_t len) const {
        gantry_get_destination dest{GANTRY_GET_DESTINATION_BUFFER, buf, len, nullptr};
        return start_get(bucket, key, &options, dest);
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
    /// Appends `len` bytes at `data` to an object in a directory bucket (S3 Express One Zone)
    /// at `offset`, which must be its current size (0 creates it); returns the new size, the
    /// offset of the next append. A stale offset throws GANTRY_RESULT_WRONG_WRITE_OFFSET.
    uint64_t append(const std::string &bucket, const std::string &key, uint64_t offset, const void *data,
                    size_t len) const {
        uint64_t size = 0;
        gantry_error *err = nullptr;
        detail::check(gantry_append(ptr_.get(), bucket.c_str(), key.c_str(), offset, static_cast<const uint8_t *>(data),
                                    len, &size, &err),
                      err);
        return size;
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
    /// Deletes the object (S3 answers success for a key that does not exist).
    void delete_object(const std::string &bucket, const std::string &key) const {
        gantry_error *err = nullptr;
        detail::check(gantry_delete_object(ptr_.get(), bucket.c_str(), key.c_str(), &err), err);
    }
    /// The 0.2 name of delete_object(), kept so existing callers build.
    [[deprecated("use delete_object")]] void remove(const std::string &bucket, const std::string &key) const {
        delete_object(bucket, key);
    }
    void create_bucket(const std::string &bucket) const {
        gantry_error *err = nullptr;
        detail::check(gantry_create_bucket(ptr_.get(), bucket.c_str(), &err), err);
    }
    /// Copies src_bucket/src_key to bucket/key on the server (CopyObject, or parallel
    /// UploadPartCopy parts above the copy_threshold key, 1 GiB by default, aborted on failure); returns the
    /// number of parts (1 for a single CopyObject). Blocks.
    uint32_t copy_object(const std::string &src_bucket, const std::string &src_key, const std::string &bucket,
                         const std::string &key) const {
        uint32_t parts = 0;
        gantry_error *err = nullptr;
        detail::check(gantry_copy_object(ptr_.get(), src_bucket.c_str(), src_key.c_str(), bucket.c_str(), key.c_str(),
                                         &parts, &err),
                      err);
        return parts;
    }
    /// One key a batch delete could not remove, with the server's S3 error code.
    struct DeleteFailure {
        std::string key;
        std::string code;
    };
    /// What delete_objects did: keys deleted (a missing key counts) and keys refused.
    struct DeleteReport {
        uint64_t deleted = 0;
        std::vector<DeleteFailure> failed;
    };
    /// Deletes `keys` with DeleteObjects, 1,000 keys a request. Keys the server refuses are
    /// reported, not thrown, as are the keys of a batch whose request failed as a whole; it
    /// throws only when every batch failed (nothing was deleted). Blocks.
    [[nodiscard]] DeleteReport delete_objects(const std::string &bucket, const std::vector<std::string> &keys) const {
        std::vector<const char *> raw;
        raw.reserve(keys.size());
        for (const auto &k : keys) raw.push_back(k.c_str());
        gantry_delete_report *report = nullptr;
        gantry_error *err = nullptr;
        detail::check(gantry_delete_objects(ptr_.get(), bucket.c_str(), raw.empty() ? nullptr : raw.data(), raw.size(),
                                            &report, &err),
                      err);
        std::unique_ptr<gantry_delete_report, decltype(&gantry_delete_report_free)> owned(report,
                                                                                           &gantry_delete_report_free);
        DeleteReport out;
        out.deleted = gantry_delete_report_deleted(report);
        for (size_t i = 0, n = gantry_delete_report_failed_count(report); i < n; i++) {
            const char *code = gantry_delete_report_failed_code(report, i);
            out.failed.push_back({gantry_delete_report_failed_key(report, i), code ? code : ""});
        }
        return out;
    }
    /// Downloads up to `len` bytes from `offset` into `buf`; returns the bytes written (fewer at
    /// the end of the object; an offset past the end throws with HTTP 416).
    uint64_t get_range_into(const std::string &bucket, const std::string &key, uint64_t offset, void *buf,
                            size_t len) const {
        uint64_t written = 0;
        gantry_error *err = nullptr;
        detail::check(gantry_get_range_into(ptr_.get(), bucket.c_str(), key.c_str(), offset, len,
                                            static_cast<uint8_t *>(buf), len, &written, &err),
                      err);
        return written;
    }
    /// Starts a download into caller memory on the workers (no thread of yours waits); `buf`
    /// is in use until the Request ended. wait() returns the object's size.
    [[nodiscard]] Request get_into_async(const std::string &bucket, const std::string &key, void *buf,
                                         size_t len) const {
        gantry_get_destination dest{GANTRY_GET_DESTINATION_BUFFER, buf, len, nullptr};
        return start_get(bucket, key, nullptr, dest);
    }
    /// Starts a range download into caller memory; wait() returns the bytes written.
    [[nodiscard]] Request get_range_into_async(const std::string &bucket, const std::string &key, uint64_t offset,
                                               void *buf, size_t len) const {
        if (buf == nullptr || len == 0) {
            // As gantry_get_range_into_start answers an empty buffer.
            throw Error(GANTRY_RESULT_NULL_PARAMETER, "buf must not be NULL", 0, "", "", false);
        }
        gantry_get_destination dest{GANTRY_GET_DESTINATION_BUFFER, buf, len, nullptr};
        GetOptions options;
        options.range(offset, offset + len);
        return start_get(bucket, key, &options, dest);
    }
    /// Starts an upload of caller memory without a copy; `data` must stay valid and unchanged
    /// until the Request ended.
    [[nodiscard]] Request put_async(const std::string &bucket, const std::string &key, const void *data,
                                    size_t len) const {
        gantry_request *raw = nullptr;
        gantry_error *err = nullptr;
        detail::check(gantry_put_buffer_start(ptr_.get(), bucket.c_str(), key.c_str(),
                                              static_cast<const uint8_t *>(data), len, nullptr, nullptr, &raw, &err),
                      err);
        return Request(raw, nullptr);
    }
    /// Streams `length` bytes from `offset` (UINT64_MAX: to the end) in order to `handler`, on
    /// a worker thread, at most `window` bytes ahead of Request::open_window calls.
    [[nodiscard]] Request stream(const std::string &bucket, const std::string &key, ChunkHandler handler,
                                 uint64_t offset = 0, uint64_t length = UINT64_MAX,
                                 uint64_t window = unlimited_window) const {
        auto state = std::make_shared<ChunkHandler>(std::move(handler));
        gantry_request *raw = nullptr;
        gantry_error *err = nullptr;
        detail::check(gantry_get_stream_start(ptr_.get(), bucket.c_str(), key.c_str(), offset, length, window,
                                              &on_chunk, nullptr, state.get(), &raw, &err),
                      err);
        return Request(raw, std::move(state));
    }
    /// Every counter of the client (gantry_metrics_ex).
    [[nodiscard]] gantry_metrics_ex metrics() const {
        gantry_metrics_ex m{};
        m.struct_size = sizeof m;
        gantry_error *err = nullptr;
        detail::check(gantry_client_metrics_ex(ptr_.get(), &m, &err), err);
        return m;
    }
    /// Counters per NIC or source address (one "default" lane when none is configured).
    [[nodiscard]] std::vector<gantry_lane_metrics> lane_metrics() const {
        std::vector<gantry_lane_metrics> out(static_cast<size_t>(metrics().lane_count));
        for (size_t i = 0; i < out.size(); i++) {
            out[i].struct_size = sizeof out[i];
            gantry_error *err = nullptr;
            detail::check(gantry_client_lane_metrics(ptr_.get(), i, &out[i], &err), err);
        }
        return out;
    }
    [[nodiscard]] Upload upload(const std::string &bucket, const std::string &key) const {
        gantry_upload *raw = nullptr;
        gantry_error *err = nullptr;
        detail::check(gantry_upload_new(ptr_.get(), bucket.c_str(), key.c_str(), &raw, &err), err);
        return Upload(raw);
    }

private:
    uint64_t run_get(const std::string &bucket, const std::string &key, const GetOptions &options,
                     const gantry_get_destination &dest) const {
        gantry_get_options o = options.c_options();
        uint64_t size = 0;
        gantry_error *err = nullptr;
        detail::check(gantry_get(ptr_.get(), bucket.c_str(), key.c_str(), &o, &dest, &size, &err), err);
        return size;
    }
    Request start_get(const std::string &bucket, const std::string &key, const GetOptions *options,
                      const gantry_get_destination &dest) const {
        gantry_get_options o{};
        if (options != nullptr) o = options->c_options();
        gantry_request *raw = nullptr;
        gantry_error *err = nullptr;
        detail::check(gantry_get_start(ptr_.get(), bucket.c_str(), key.c_str(), options ? &o : nullptr, &dest, nullptr,
                                       nullptr, &raw, &err),
                      err);
        return Request(raw, nullptr);
    }
    static int32_t on_chunk(void *user, const uint8_t *data, size_t len, uint64_t offset, const gantry_chunk *raw) {
        try {
            return (*static_cast<ChunkHandler *>(user))(Chunk{data, len, offset, raw}) ? 0 : 1;
        } catch (...) {
            return 1;  // an exception must not cross into the engine: stop the stream instead
        }
    }
    std::unique_ptr<gantry_client, detail::Deleter<gantry_client, gantry_client_free>> ptr_;
};

/// The library's version string ("MAJOR.MINOR.PATCH").
inline std::string version() { return gantry_version(); }

}  // namespace gantry

#endif  // GANTRY_HPP
