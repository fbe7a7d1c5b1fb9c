// ccf — concurrent cuckoo filters.
// version.hpp: the library's version (CMake reads it from here too).
#pragma once

namespace ccf {

inline constexpr int version_major = 0;
inline constexpr int version_minor = 2;
inline constexpr int version_patch = 0;
/// "major.minor.patch".
inline constexpr const char* version_string = "0.2.0";

}  // namespace ccf
