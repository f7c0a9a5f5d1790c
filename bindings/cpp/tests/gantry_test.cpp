// GoogleTest suite for gantry.hpp against a real server: GANTRY_TEST_ENDPOINT (a `gantry serve`
// with the default keys, started by bindings/cpp/run_tests.sh).
#include "gantry.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

std::string endpoint() {
    const char *e = std::getenv("GANTRY_TEST_ENDPOINT");
    return e ? e : "";
}

gantry::Config config(const std::string &secret = "gantry-secret-key") {
    gantry::Config c;
    c.set("endpoint_url", endpoint())
        .set("access_key_id", "gantry")
        .set("secret_access_key", secret)
        .set("part_size", "5MiB")
        .set("copy_threshold", "5MiB")  // copies above one part go multipart (UploadPartCopy)
        .set("copy_part_size", "5MiB")
        .set("max_connections", "4")
        .set("memory_limit", "64MiB");
    return c;
}

/// A fresh directory under the test temp dir, removed with everything in it at the end of
/// the test: tests leave nothing behind and never collide with another run's files.
class ScratchDir {
public:
    ScratchDir() {
        std::string tmpl = ::testing::TempDir() + "gantry-test-XXXXXX";
        if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
        path_ = tmpl;
    }
    ~ScratchDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    ScratchDir(const ScratchDir &) = delete;
    ScratchDir &operator=(const ScratchDir &) = delete;
    [[nodiscard]] const std::string &path() const { return path_; }

private:
    std::string path_;
};

std::string pattern(size_t len, unsigned seed) {
    std::mt19937 rng(seed);
    std::string s(len, '\0');
    for (auto &ch : s) ch = static_cast<char>(rng());
    return s;
}

class GantryTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        ASSERT_FALSE(endpoint().empty()) << "GANTRY_TEST_ENDPOINT is not set";
        gantry::Client(config()).create_bucket("cpptests");
    }
    gantry::Client client{config()};
    const std::string bucket = "cpptests";
};

TEST_F(GantryTest, RoundTripsEverySize) {
    for (size_t len : {size_t{0}, size_t{1}, size_t{3} * (5u << 20) + 7}) {
        auto data = pattern(len, static_cast<unsigned>(len));
        auto key = "obj-" + std::to_string(len);
        client.put(bucket, key, data);
        EXPECT_EQ(client.head_size(bucket, key), len);
        EXPECT_EQ(client.get(bucket, key), data);
    }
}

TEST_F(GantryTest, ServerSideCopyAndBatchDelete) {
    auto data = pattern(size_t{2} * (5u << 20) + 9, 31);
    client.put(bucket, "cp-src", data);
    EXPECT_EQ(client.copy_object(bucket, "cp-src", bucket, "cp dst+1"), 3u);
    EXPECT_EQ(client.get(bucket, "cp dst+1"), data);
    EXPECT_THROW(client.copy_object(bucket, "no-such-source", bucket, "x"), gantry::Error);
    auto report = client.delete_objects(bucket, {"cp-src", "cp dst+1", "never-existed"});
    EXPECT_EQ(report.deleted, 3u);
    EXPECT_TRUE(report.failed.empty());
    EXPECT_THROW(client.head_size(bucket, "cp dst+1"), gantry::Error);
    EXPECT_EQ(client.delete_objects(bucket, {}).deleted, 0u);
}

TEST_F(GantryTest, FilesAndStreamingUpload) {
    auto data = pattern((11u << 20) + 3, 9);
    ScratchDir dir;
    std::string src = dir.path() + "/src.bin";
    std::ofstream(src, std::ios::binary) << data;
    client.put_file(bucket, "from-file", src);
    std::string dst = dir.path() + "/dst.bin";
    EXPECT_EQ(client.download_to_file(bucket, "from-file", dst), data.size());
    std::ifstream in(dst, std::ios::binary);
    std::string back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(back, data);

    auto up = client.upload(bucket, "streamed");
    for (size_t off = 0; off < data.size(); off += 999'983) up.write(data.substr(off, 999'983));
    up.complete();
    EXPECT_EQ(client.get(bucket, "streamed"), data);
    EXPECT_THROW(up.write("more"), gantry::Error);
}

TEST_F(GantryTest, ErrorsCarryS3Metadata) {
    try {
        client.head_size(bucket, "missing");
        FAIL() << "expected an error";
    } catch (const gantry::Error &e) {
        EXPECT_EQ(e.code(), GANTRY_RESULT_NOT_FOUND);
        EXPECT_EQ(e.http_status(), 404);
        EXPECT_FALSE(e.retryable());
    }
    try {
        client.get_into(bucket, "missing", nullptr, 0);
        FAIL() << "expected an error";
    } catch (const gantry::Error &e) {
        EXPECT_EQ(e.s3_code(), "NoSuchKey");
    }
    // get() reports a missing key as get_into() does (a HEAD first gave a 404 with no S3 code).
    try {
        client.get(bucket, "missing");
        FAIL() << "expected an error";
    } catch (const gantry::Error &e) {
        EXPECT_EQ(e.code(), GANTRY_RESULT_NOT_FOUND);
        EXPECT_EQ(e.s3_code(), "NoSuchKey");
    }
    gantry::Client bad(config("wrong"));
    try {
        bad.put(bucket, "k", "x");
        FAIL() << "expected an error";
    } catch (const gantry::Error &e) {
        EXPECT_EQ(e.code(), GANTRY_RESULT_ACCESS_DENIED);
        EXPECT_EQ(e.http_status(), 403);
    }
    EXPECT_THROW(gantry::Config().set("no_such_key", "1"), gantry::Error);
}

TEST_F(GantryTest, AbandonedUploadLeavesNothing) {
    {
        auto up = client.upload(bucket, "abandoned");
        up.write(pattern(11u << 20, 3));
    }  // destroyed without complete(): aborted
    EXPECT_THROW(client.head_size(bucket, "abandoned"), gantry::Error);
}

TEST_F(GantryTest, HandlesAreMoveOnly) {
    static_assert(!std::is_copy_constructible_v<gantry::Client>);
    static_assert(std::is_move_constructible_v<gantry::Client>);
    static_assert(!std::is_copy_constructible_v<gantry::Upload>);
    gantry::Client moved = std::move(client);
    EXPECT_EQ(moved.head_size(bucket, "obj-1"), 1u);
}

TEST_F(GantryTest, AsyncRequestsIntoCallerMemory) {
    auto data = pattern(3 * (5u << 20) + 7, 77);
    auto put = client.put_async(bucket, "async", data.data(), data.size());
    EXPECT_EQ(put.wait(), data.size());
    std::string back(data.size(), '\0');
    std::string range(10, '\0');
    // Several requests in flight at once, none of them holding a thread of ours.
    auto whole = client.get_into_async(bucket, "async", back.data(), back.size());
    auto part = client.get_range_into_async(bucket, "async", (5u << 20) - 3, range.data(), range.size());
    EXPECT_EQ(whole.wait(), data.size());
    EXPECT_EQ(part.wait(), 10u);
    EXPECT_EQ(back, data);
    EXPECT_EQ(range, data.substr((5u << 20) - 3, 10));
    EXPECT_EQ(client.get_range_into(bucket, "async", data.size() - 2, range.data(), range.size()), 2u);

    auto missing = client.get_into_async(bucket, "missing", back.data(), back.size());
    try {
        missing.wait();
        FAIL() << "expected an error";
    } catch (const gantry::Error &e) {
        EXPECT_EQ(e.code(), GANTRY_RESULT_NOT_FOUND);
    }
    auto cancelled = client.get_into_async(bucket, "async", back.data(), back.size());
    cancelled.cancel();
    try {
        cancelled.wait();  // may also have finished first
    } catch (const gantry::Error &e) {
        EXPECT_EQ(e.code(), GANTRY_RESULT_CANCELLED);
    }
}

TEST_F(GantryTest, GetOptionsRangeAndConditions) {
    auto data = pattern(2 * (5u << 20) + 9, 31);
    client.put(bucket, "with", data.data(), data.size());
    std::string buf(3u << 20, '\0');
    // A range over a part boundary with 1 MiB parts, into caller memory.
    auto opts = gantry::GetOptions().range((5u << 20) - 5, (5u << 20) - 5 + buf.size()).part_size_bytes(1u << 20);
    EXPECT_EQ(client.get_into_with(bucket, "with", opts, buf.data(), buf.size()), buf.size());
    EXPECT_EQ(buf, data.substr((5u << 20) - 5, buf.size()));
    auto req = client.get_into_with_async(bucket, "with", gantry::GetOptions().range(3, 13), buf.data(), 10);
    EXPECT_EQ(req.wait(), 10u);
    EXPECT_EQ(buf.substr(0, 10), data.substr(3, 10));
    // If-Match that does not match: 412 before any byte.
    try {
        client.get_into_with(bucket, "with", gantry::GetOptions().range(0, 10).if_match("\"0123456789abcdef\""),
                             buf.data(), buf.size());
        FAIL() << "expected an error";
    } catch (const gantry::Error &e) {
        EXPECT_EQ(e.code(), GANTRY_RESULT_PRECONDITION_FAILED);
        EXPECT_EQ(e.http_status(), 412);
        EXPECT_FALSE(e.retryable());
    }
    // If-None-Match "*": any current object is a match (304).
    try {
        client.get_into_with(bucket, "with", gantry::GetOptions().if_none_match("*"), buf.data(), buf.size());
        FAIL() << "expected an error";
    } catch (const gantry::Error &e) {
        EXPECT_EQ(e.code(), GANTRY_RESULT_NOT_MODIFIED);
    }
    // A range into a file, checksum verification off.
    ScratchDir dir;
    auto path = dir.path() + "/with";
    EXPECT_EQ(client.download_to_file_with(bucket, "with",
                                      gantry::GetOptions().range(7, 1007).checksum(GANTRY_DOWNLOAD_CHECKSUM_SKIP), path),
              1000u);
    std::ifstream in(path, std::ios::binary);
    std::string back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(back, data.substr(7, 1000));
}

TEST_F(GantryTest, StreamWithCallerOpenedWindow) {
    auto data = pattern(4 * (5u << 20) + 1, 78);
    client.put(bucket, "windowed", data);
    std::mutex mu;
    std::string got;
    std::vector<gantry::HeldChunk> kept;
    std::atomic<uint64_t> delivered{0};
    const uint64_t window = 1u << 20;
    auto req = client.stream(
        bucket, "windowed",
        [&](const gantry::Chunk &c) {
            std::lock_guard<std::mutex> lock(mu);
            EXPECT_EQ(c.offset, got.size());
            got.append(reinterpret_cast<const char *>(c.data), c.size);
            if (kept.size() < 4) kept.push_back(c.retain());
            delivered += c.size;
            return true;
        },
        0, UINT64_MAX, window);
    for (int i = 0; i < 400 && delivered < window; i++) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(delivered.load(), window) << "the stream must stop at the window";
    req.open_window(UINT64_MAX);
    EXPECT_EQ(req.wait(), data.size());
    EXPECT_EQ(got, data);
    for (const auto &h : kept) EXPECT_EQ(std::memcmp(h.data(), data.data() + h.offset(), h.size()), 0);

    // A handler that returns false stops the stream; a throwing one too.
    auto stopped = client.stream(bucket, "windowed", [](const gantry::Chunk &) { return false; });
    EXPECT_THROW(stopped.wait(), gantry::Error);
    auto thrown = client.stream(bucket, "windowed", [](const gantry::Chunk &) -> bool { throw std::runtime_error("x"); });
    EXPECT_THROW(thrown.wait(), gantry::Error);
}

TEST_F(GantryTest, OwnedWritesAndCancelledUpload) {
    auto data = pattern(2 * (5u << 20) + 5, 79);
    {
        auto up = client.upload(bucket, "owned");
        up.write_owned(std::vector<uint8_t>(data.begin(), data.begin() + (5u << 20)));
        up.write_owned(std::vector<uint8_t>(data.begin() + (5u << 20), data.end()));
        up.complete();
    }
    EXPECT_EQ(client.get(bucket, "owned"), data);

    auto up = client.upload(bucket, "cancelled");
    std::thread canceller([&up] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        up.cancel();
    });
    auto piece = pattern(1u << 20, 80);
    try {
        for (int i = 0; i < 100000; i++) up.write(piece);
        FAIL() << "the cancel never arrived";
    } catch (const gantry::Error &e) {
        EXPECT_EQ(e.code(), GANTRY_RESULT_CANCELLED);
    }
    canceller.join();
    EXPECT_THROW(up.complete(), gantry::Error);
    EXPECT_THROW(client.head_size(bucket, "cancelled"), gantry::Error);
}

TEST_F(GantryTest, MetricsAndLanes) {
    client.put(bucket, "m", "x");
    auto m = client.metrics();
    EXPECT_EQ(m.struct_size, sizeof m);
    EXPECT_GE(m.requests, 1u);
    auto lanes = client.lane_metrics();
    ASSERT_EQ(lanes.size(), 1u);
    EXPECT_STREQ(lanes[0].name, "default");
    EXPECT_EQ(lanes[0].bytes_uploaded, m.bytes_uploaded);
}

TEST_F(GantryTest, CredentialsProviderFetchesOnceAndIsReleased) {
    auto calls = std::make_shared<std::atomic<int>>(0);
    std::weak_ptr<std::atomic<int>> captured = calls;
    auto caller = std::this_thread::get_id();
    std::atomic<bool> on_caller_thread{false};
    {
        gantry::Config cfg;
        cfg.set("endpoint_url", endpoint()).set("part_size", "5MiB");
        cfg.credentials_provider([calls, caller, &on_caller_thread] {
            ++*calls;
            if (std::this_thread::get_id() == caller) on_caller_thread = true;
            gantry::Credentials c;
            c.access_key_id = "gantry";
            c.secret_access_key = "gantry-secret-key";
            c.session_token = "session";  // temporary-looking keys; the test server ignores it
            c.expiry = std::chrono::system_clock::now() + std::chrono::hours(1);
            return c;
        });
        gantry::Client provided(cfg);
        for (int i = 0; i < 10; i++) {
            provided.put(bucket, "provided", "x");
            EXPECT_EQ(provided.head_size(bucket, "provided"), 1u);
        }
        EXPECT_EQ(calls->load(), 1) << "one fetch serves every request until the expiry nears";
        EXPECT_FALSE(on_caller_thread.load()) << "the provider runs on a gantry thread";
    }
    calls.reset();
    // The library destroys the function (and what it captured) once the Config and the Client
    // are gone; the Client's threads end asynchronously, so allow a moment.
    for (int i = 0; i < 500 && !captured.expired(); i++) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_TRUE(captured.expired()) << "the provider was not released";
}

TEST_F(GantryTest, ThrowingCredentialsProviderFailsTheFetch) {
    gantry::Config cfg;
    cfg.set("endpoint_url", endpoint());
    cfg.credentials_provider([]() -> gantry::Credentials { throw std::runtime_error("vault is sealed"); });
    gantry::Client sealed(cfg);
    try {
        sealed.head_size(bucket, "obj-1");
        FAIL() << "expected an error";
    } catch (const gantry::Error &e) {
        EXPECT_EQ(e.code(), GANTRY_RESULT_CREDENTIALS);
        EXPECT_NE(std::string(e.what()).find("credentials callback: vault is sealed"), std::string::npos) << e.what();
        EXPECT_FALSE(e.retryable());
    }
    // Keys the library refuses fail the fetch with the reason; no exception type escapes.
    gantry::Config empty;
    empty.set("endpoint_url", endpoint()).credentials_provider([] { return gantry::Credentials{}; });
    try {
        gantry::Client(empty).head_size(bucket, "obj-1");
        FAIL() << "expected an error";
    } catch (const gantry::Error &e) {
        EXPECT_EQ(e.code(), GANTRY_RESULT_CREDENTIALS);
        EXPECT_NE(std::string(e.what()).find("must not be empty"), std::string::npos) << e.what();
    }
    gantry::Config odd;
    odd.set("endpoint_url", endpoint()).credentials_provider([]() -> gantry::Credentials { throw 42; });
    EXPECT_THROW(gantry::Client(odd).head_size(bucket, "obj-1"), gantry::Error);
    EXPECT_THROW(gantry::Config().credentials_provider(nullptr), std::invalid_argument);
}

// Appends to a directory bucket on the fault server's S3 Express double (sessions are made
// and used without any call for them). run_tests.sh starts that server and names it in
// GANTRY_EXPRESS_ENDPOINT; without it (a plain ctest run) the test fails rather than pass
// unchecked.
TEST(GantryExpress, AppendExtendsAnObjectAtItsSize) {
    const char *ep = std::getenv("GANTRY_EXPRESS_ENDPOINT");
    ASSERT_NE(ep, nullptr) << "run through bindings/cpp/run_tests.sh (it starts the S3 Express double)";
    gantry::Config c;
    c.set("endpoint_url", ep).set("access_key_id", "AKIDBASE").set("secret_access_key", "base-secret");
    gantry::Client client(c);
    const std::string dir = "cpplogs--use1-az4--x-s3";
    client.create_bucket(dir);
    // The plain and the sanitizer build share the server: each run appends to its own key.
    const std::string key = "log-" + std::to_string(getpid());
    EXPECT_EQ(client.append(dir, key, 0, "first\n", 6), 6u);
    EXPECT_EQ(client.append(dir, key, 6, "second\n", 7), 13u);
    try {
        client.append(dir, key, 6, "stale\n", 6);
        FAIL() << "a stale offset must throw";
    } catch (const gantry::Error &e) {
        EXPECT_EQ(e.code(), GANTRY_RESULT_WRONG_WRITE_OFFSET);
        EXPECT_EQ(e.http_status(), 400u);
        EXPECT_EQ(e.s3_code(), "InvalidWriteOffset");
    }
    EXPECT_EQ(client.get(dir, key), "first\nsecond\n");
}

}  // namespace
