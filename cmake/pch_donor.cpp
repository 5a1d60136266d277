// The source of the targets that own the shared precompiled headers (cmake/TdrlOptions.cmake):
// a target needs one source for CMake to build its PCH.
