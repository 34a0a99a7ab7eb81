// graph/data_files.h — where graphrun finds the files it ships: the graphs (models/*.json) and the
// default model (models/kjv-q8_0.gguf).
//
// Names are relative to a data folder laid out like the checkout's root: "models/llama.json".
// The folders searched, in order:
//   1. $GRAPHRUN_DATA when it is set: then it is the only one, so a user (or a test) knows exactly
//      which files ran;
//   2. <the executable's folder>/../share/graphrun: an installed graphrun (cmake --install, the .deb);
//   3. the checkout this build was configured from, but only for executables inside that build tree,
//      so an installed or copied binary never reads a checkout behind the user's back.
//
//   find_data_file("models/llama.json")  ->  "/usr/share/graphrun/models/llama.json"
//   (not found: DataFileError "cannot find models/llama.json: looked in ... (beside the executable
//    /opt/x/bin/graphrun), ...; set GRAPHRUN_DATA to a folder that holds models/llama.json")
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace graphrun::graph {

class DataFileError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct DataFolder {
    std::string path;    // as searched, e.g. "/usr/bin/../share/graphrun"
    std::string origin;  // why it is searched: "$GRAPHRUN_DATA", "beside the executable /usr/bin/graphrun", ...
};

// The folders find_data_file searches, in order (whether or not they exist).
std::vector<DataFolder> data_search_path();

// The first folder of data_search_path() that has `relative`; DataFileError names every place tried.
DataFolder find_data_folder(const std::string& relative);
// `relative` in that folder: find_data_file("models/llama.json") -> "/usr/share/graphrun/models/llama.json".
std::string find_data_file(const std::string& relative);

}  // namespace graphrun::graph
