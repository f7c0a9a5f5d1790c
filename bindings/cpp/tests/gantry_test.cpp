// GoogleTest suite for gantry.hpp against a real server: GANTRY_TEST_ENDPOINT (a `gantry serve`
// with the default keys, started by bindings/cpp/run_tests.sh).
#include "gantry.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <string>

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
        .set("max_connections", "4")
        .set("memory_limit", "64MiB");
    return c;
}

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

TEST_F(GantryTest, FilesAndStreamingUpload) {
    auto data = pattern((11u << 20) + 3, 9);
    std::string src = ::testing::TempDir() + "gantry-src.bin";
    std::ofstream(src, std::ios::binary) << data;
    client.put_file(bucket, "from-file", src);
    std::string dst = ::testing::TempDir() + "gantry-dst.bin";
    EXPECT_EQ(client.get_to_file(bucket, "from-file", dst), data.size());
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

}  // namespace
