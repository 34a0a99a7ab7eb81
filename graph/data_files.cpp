// graph/data_files.cpp — the data folder search of graph/data_files.h.
#include "graph/data_files.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace graphrun::graph {

namespace fs = std::filesystem;

namespace {

// Set by CMake: where an installed executable finds its data, relative to its own folder
// (bin/ -> share/graphrun/), and the source and build folders of this build tree.
constexpr const char* kInstallDataRelative = GRAPHRUN_INSTALL_DATA_RELATIVE;
constexpr const char* kSourceDir = GRAPHRUN_SOURCE_DIR;
constexpr const char* kBuildDir = GRAPHRUN_BUILD_DIR;

fs::path executable_path() {
    std::error_code error;
    fs::path exe = fs::read_symlink("/proc/self/exe", error);
    return error ? fs::path() : exe;
}

bool is_inside(const fs::path& path, const fs::path& folder) {
    std::error_code error;
    const fs::path inner = fs::weakly_canonical(path, error);
    if (error) return false;
    const fs::path outer = fs::weakly_canonical(folder, error);
    if (error) return false;
    const fs::path rest = inner.lexically_relative(outer);
    return !rest.empty() && *rest.begin() != "..";
}

const char* data_override() {
    const char* value = std::getenv("GRAPHRUN_DATA");
    return value && *value ? value : nullptr;
}

}  // namespace

std::vector<DataFolder> data_search_path() {
    if (const char* override_dir = data_override()) return {{override_dir, "$GRAPHRUN_DATA"}};
    std::vector<DataFolder> folders;
    const fs::path exe = executable_path();
    if (!exe.empty()) {
        folders.push_back({(exe.parent_path() / kInstallDataRelative).lexically_normal().string(),
                           "beside the executable " + exe.string()});
        if (is_inside(exe, kBuildDir))
            folders.push_back({kSourceDir, std::string("the checkout the build tree ") + kBuildDir +
                                               " was configured from"});
    }
    return folders;
}

DataFolder find_data_folder(const std::string& relative) {
    std::string looked;
    for (const DataFolder& folder : data_search_path()) {
        const fs::path candidate = fs::path(folder.path) / relative;
        std::error_code error;
        if (fs::exists(candidate, error)) return folder;
        looked += (looked.empty() ? "" : ", ") + candidate.string() + " (" + folder.origin + ")";
    }
    std::string message = "cannot find " + relative + ": looked for " + (looked.empty() ? "nothing" : looked);
    if (data_override()) {
        message += "; $GRAPHRUN_DATA replaces the other places (unset it to search them)";
    } else {
        if (executable_path().empty()) message += "; /proc/self/exe is unreadable, so no place beside the executable";
        else if (!is_inside(executable_path(), kBuildDir))
            message += std::string("; the checkout ") + kSourceDir + " is searched only by executables of its build tree " +
                       kBuildDir;
        message += "; install graphrun (cmake --install) or set GRAPHRUN_DATA to a folder that holds " + relative;
    }
    throw DataFileError(message);
}

std::string find_data_file(const std::string& relative) {
    return (fs::path(find_data_folder(relative).path) / relative).string();
}

}  // namespace graphrun::graph
