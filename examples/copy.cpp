// Uploads a local file to S3 and downloads it back next to it, through gantry.hpp.
//   copy_cpp ENDPOINT BUCKET KEY FILE   (credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)
#include "gantry.hpp"

#include <iostream>

int main(int argc, char **argv) {
    if (argc != 5) {
        std::cerr << "usage: " << argv[0] << " ENDPOINT BUCKET KEY FILE\n";
        return 2;
    }
    try {
        gantry::Client client(gantry::Config().set("endpoint_url", argv[1]));
        client.put_file(argv[2], argv[3], argv[4]);
        std::string back = std::string(argv[4]) + ".back";
        auto size = client.download_to_file(argv[2], argv[3], back);
        std::cout << "uploaded " << argv[4] << " and downloaded " << size << " bytes into " << back << "\n";
    } catch (const gantry::Error &e) {
        std::cerr << e.what() << " (HTTP " << e.http_status() << ", " << e.s3_code() << ")\n";
        return 1;
    }
}
