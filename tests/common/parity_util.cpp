// tests/common/parity_util.cpp — child processes for the llama.cpp reference and the graphrun binary.
#include "tests/common/parity_util.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace graphrun::test {

namespace {

namespace fs = std::filesystem;

const char* const kReferenceScript = GRAPHRUN_SOURCE_DIR "/tests/parity/llama_reference.mjs";

std::string join_args(const std::vector<std::string>& argv) {
    std::string s;
    for (const std::string& a : argv) s += (s.empty() ? "" : " ") + ("'" + a + "'");
    return s;
}

// This process's environment with `extra` ("NAME=value") added or replacing same-named entries.
std::vector<std::string> environment_with(const std::vector<std::string>& extra) {
    auto name_of = [](const std::string& kv) { return kv.substr(0, kv.find('=')); };
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
        const std::string kv = *e;
        bool replaced = false;
        for (const std::string& x : extra) replaced = replaced || name_of(x) == name_of(kv);
        if (!replaced) env.push_back(kv);
    }
    env.insert(env.end(), extra.begin(), extra.end());
    return env;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
    std::vector<char*> out;
    for (std::string& s : v) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

std::vector<int32_t> int_list(const nlohmann::json& j, const char* field) {
    if (!j.contains(field) || !j[field].is_array())
        throw std::runtime_error(std::string("[llama.cpp reference] output has no array \"") + field + "\"");
    return j[field].get<std::vector<int32_t>>();
}

std::optional<LlamaReference> run_reference(const std::string& model, std::vector<std::string> input_args,
                                            int n, const LlamaReferenceOptions& options) {
    if (parity_harness_missing()) return std::nullopt;
    std::vector<std::string> argv = {"node", kReferenceScript, "--model", model, "-n", std::to_string(n)};
    argv.insert(argv.end(), input_args.begin(), input_args.end());
    if (options.ctx > 0) argv.insert(argv.end(), {"--ctx", std::to_string(options.ctx)});
    if (options.ignore_eos) argv.push_back("--ignore-eos");
    if (options.logit_gaps) argv.push_back("--logit-gaps");

    const ProcessResult r = run_process(argv, {"GRAPHRUN_PARITY_DIR=" + parity_dir()});
    if (r.exit_code != 0)
        throw std::runtime_error("[llama.cpp reference] " + join_args(argv) + " exited with status " +
                                 std::to_string(r.exit_code) + ":\n" + r.err);
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(r.out);
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error("[llama.cpp reference] " + join_args(argv) + " printed no valid JSON (" +
                                 e.what() + "):\n" + r.out + "\n" + r.err);
    }
    LlamaReference ref;
    ref.prompt_ids = int_list(j, "prompt_ids");
    ref.greedy_ids = int_list(j, "greedy_ids");
    ref.stopped_at_eos = j.value("stopped_at_eos", false);
    ref.eos_id = j.contains("eos") && j["eos"].is_number_integer() ? j["eos"].get<int32_t>() : -1;
    ref.text = j.value("text", "");
    if (options.logit_gaps) {
        ref.top2_gaps = j.value("top2_gaps", std::vector<float>{});
        if (ref.top2_gaps.size() != ref.greedy_ids.size())
            throw std::runtime_error("[llama.cpp reference] " + join_args(argv) + ": " +
                                     std::to_string(ref.top2_gaps.size()) + " top-2 gaps for " +
                                     std::to_string(ref.greedy_ids.size()) + " greedy ids");
    }
    return ref;
}

}  // namespace

std::string parity_dir() {
    if (const char* env = std::getenv("GRAPHRUN_PARITY_DIR"); env && *env) return env;
    // tools/parity-setup.sh <build dir>/parity is the documented default, and the graphrun binary
    // sits in the build dir.
    return (fs::path(GRAPHRUN_BINARY).parent_path() / "parity").string();
}

std::optional<std::string> parity_harness_missing() {
    const fs::path dir = parity_dir();
    // parity-setup.sh writes the stamp only after the install loaded llama.cpp's binary once.
    if (fs::exists(dir / ".graphrun-parity-stamp") &&
        fs::exists(dir / "node_modules/node-llama-cpp/package.json"))
        return std::nullopt;
    return "llama.cpp reference (node-llama-cpp) is not installed in " + dir.string() +
           "; run `tools/parity-setup.sh " + dir.string() + "` (or set GRAPHRUN_PARITY_DIR to its output)";
}

std::optional<LlamaReference> llama_cpp_reference(const std::string& model,
                                                  const std::vector<int32_t>& prompt, int n,
                                                  const LlamaReferenceOptions& options) {
    if (prompt.empty()) throw std::invalid_argument("[llama.cpp reference] empty token prompt");
    return run_reference(model, {"--tokens", join_ids(prompt)}, n, options);
}

std::optional<LlamaReference> llama_cpp_reference_text(const std::string& model, const std::string& prompt,
                                                       int n, const LlamaReferenceOptions& options) {
    return run_reference(model, {"--prompt", prompt}, n, options);
}

std::optional<std::vector<int32_t>> llama_cpp_greedy(const std::string& model,
                                                     const std::vector<int32_t>& prompt, int n) {
    std::optional<LlamaReference> ref = llama_cpp_reference(model, prompt, n);
    if (!ref) return std::nullopt;
    return ref->greedy_ids;
}

ProcessResult run_process(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env) {
    if (argv.empty()) throw std::invalid_argument("run_process: empty argv");
    int out_pipe[2], err_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0)
        throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    if (pipe2(err_pipe, O_CLOEXEC) != 0) {
        close(out_pipe[0]);
        close(out_pipe[1]);
        throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);

    std::vector<std::string> args = argv, env = environment_with(extra_env);
    std::vector<char*> c_args = c_strings(args), c_env = c_strings(env);
    pid_t pid = -1;
    const int rc = posix_spawnp(&pid, args[0].c_str(), &actions, nullptr, c_args.data(), c_env.data());
    posix_spawn_file_actions_destroy(&actions);
    close(out_pipe[1]);
    close(err_pipe[1]);
    if (rc != 0) {
        close(out_pipe[0]);
        close(err_pipe[0]);
        throw std::runtime_error("cannot start " + join_args(argv) + ": " + std::strerror(rc));
    }

    // Both pipes are drained together: a child blocked on a full stderr pipe would never finish stdout.
    ProcessResult result;
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    std::string* sinks[2] = {&result.out, &result.err};
    int open_fds = 2;
    char buf[65536];
    while (open_fds > 0) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            const ssize_t got = read(fds[i].fd, buf, sizeof buf);
            if (got > 0) {
                sinks[i]->append(buf, static_cast<size_t>(got));
            } else if (got == 0 || errno != EINTR) {
                close(fds[i].fd);
                fds[i].fd = -1;
                --open_fds;
            }
        }
    }
    for (pollfd& f : fds)
        if (f.fd >= 0) close(f.fd);

    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return result;
}

ProcessResult run_graphrun(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {GRAPHRUN_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv);
}

ProcessResult run_graphrun_here(const std::vector<std::string>& args, const std::string& also_env) {
    std::vector<std::string> argv{GRAPHRUN_BINARY}, env{"GRAPHRUN_DATA="};
    argv.insert(argv.end(), args.begin(), args.end());
    if (!also_env.empty()) env.push_back(also_env);
    return run_process(argv, env);
}

std::string join_ids(const std::vector<int32_t>& ids, const char* separator) {
    std::string text;
    for (int32_t id : ids) text += (text.empty() ? "" : separator) + std::to_string(id);
    return text;
}

std::vector<int32_t> parse_ids(const std::string& text) {
    std::vector<int32_t> ids;
    std::stringstream in(text);
    for (int32_t id; in >> id;) ids.push_back(id);
    return ids;
}

}  // namespace graphrun::test
