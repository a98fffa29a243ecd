# libpqxx for the whole tree (the client library, its tests, the crash driver, the benchmarks), found once
# through pkg-config (Debian ships no CMake package of it), and the C++ standard it demands.
#
#   PkgConfig::pg_ratelimit_libpqxx   the imported target to link
#   PG_RATELIMIT_LIBPQXX_VERSION      its version, e.g. 7.10.0
#   PG_RATELIMIT_LIBPQXX_ABI          major.minor (libpqxx's ABI: a library built on 7.10 needs 7.10)
#   PG_RATELIMIT_LIBPQXX_NEXT_ABI     the next minor (7.11), the first the library cannot use
#   PG_RATELIMIT_CXX_STANDARD         17, or 20 from libpqxx 8 on, whose headers need C++20
#
# The sources build on libpqxx 6.4, 7.x and 8.x alike (client/src/pqxx_compat.hpp holds every difference);
# tested on 6.4 (Debian 12), 7.10 (Debian 13) and 8.0. Targets that use libpqxx call
# pg_ratelimit_use_libpqxx(target [PUBLIC|PRIVATE]): it links libpqxx and requires the standard as a compile
# feature, so that C++17 stays the standard wherever libpqxx allows it, and C++20 reaches every target
# (and, PUBLIC, every consumer) that compiles libpqxx 8's headers.
include_guard(GLOBAL)

find_package(PkgConfig REQUIRED)
if(NOT TARGET PkgConfig::pg_ratelimit_libpqxx)
  pkg_check_modules(pg_ratelimit_libpqxx REQUIRED IMPORTED_TARGET GLOBAL libpqxx>=6.4)
endif()
set(PG_RATELIMIT_LIBPQXX_VERSION ${pg_ratelimit_libpqxx_VERSION})
string(REGEX MATCH "^([0-9]+)\\.([0-9]+)" PG_RATELIMIT_LIBPQXX_ABI "${PG_RATELIMIT_LIBPQXX_VERSION}")
math(EXPR _pg_ratelimit_next_minor "${CMAKE_MATCH_2} + 1")
set(PG_RATELIMIT_LIBPQXX_NEXT_ABI "${CMAKE_MATCH_1}.${_pg_ratelimit_next_minor}")  # the first it cannot use
if(PG_RATELIMIT_LIBPQXX_VERSION VERSION_GREATER_EQUAL 8)
  set(PG_RATELIMIT_CXX_STANDARD 20)
else()
  set(PG_RATELIMIT_CXX_STANDARD 17)
endif()

function(pg_ratelimit_use_libpqxx target scope)
  target_link_libraries(${target} ${scope} PkgConfig::pg_ratelimit_libpqxx)
  target_compile_features(${target} ${scope} cxx_std_${PG_RATELIMIT_CXX_STANDARD})
endfunction()
