// gantry.hpp compiles on its own, twice included, and the version macros match the library.
#include "gantry.hpp"
#include "gantry.hpp"

#include <cstdio>
#include <string>

int main() {
    std::string want = std::to_string(GANTRY_VERSION_MAJOR) + "." + std::to_string(GANTRY_VERSION_MINOR) + "." +
                       std::to_string(GANTRY_VERSION_PATCH);
    if (gantry::version() != want) {
        std::fprintf(stderr, "library %s, header %s\n", gantry::version().c_str(), want.c_str());
        return 1;
    }
    return 0;
}
