// runtime/output_file.cpp — the output path rules of output_file.h, and the temporary's cleanup.
//
// The cleanup on a signal: each temporary being written has a slot in a fixed table (no allocation,
// so the handler may read it); the handler unlinks every active one, restores the disposition the
// program had before and raises the signal again, so the process ends the way it would have.
#include "runtime/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>

namespace graphrun {

namespace {

std::string folder_of(const std::string& path) {
    const size_t slash = path.find_last_of('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

std::string file_kind(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

std::string human(uint64_t bytes) { return std::to_string(bytes) + " bytes"; }

// ---- removing temporaries on SIGINT / SIGTERM / SIGHUP ----

constexpr int kSlots = 8;                 // files being written at once (one, in practice)
constexpr size_t kSlotPath = 4096;        // PATH_MAX
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

struct TempSlot {
    std::atomic<int> state{0};  // 0 free, 1 being filled, 2 active (the handler removes it)
    char path[kSlotPath];
};
TempSlot g_slots[kSlots];
struct sigaction g_previous[std::size(kSignals)];
bool g_installed[std::size(kSignals)] = {};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler reads the slots");

void remove_temporaries_and_reraise(int sig) {
    const int saved_errno = errno;
    for (TempSlot& slot : g_slots)
        if (slot.state.load(std::memory_order_acquire) == 2) ::unlink(slot.path);
    for (size_t k = 0; k < std::size(kSignals); ++k)
        if (kSignals[k] == sig) ::sigaction(sig, &g_previous[k], nullptr);
    errno = saved_errno;
    ::raise(sig);  // delivered when this handler returns, with the program's own disposition
}

void install_handlers_once() {
    static std::once_flag once;
    std::call_once(once, [] {
        for (size_t k = 0; k < std::size(kSignals); ++k) {
            struct sigaction current {};
            if (::sigaction(kSignals[k], nullptr, &current) != 0) continue;
            if (current.sa_handler == SIG_IGN) continue;  // e.g. SIGHUP under nohup: stay ignored
            struct sigaction ours {};
            ours.sa_handler = remove_temporaries_and_reraise;
            sigemptyset(&ours.sa_mask);
            ours.sa_flags = SA_RESTART;
            g_installed[k] = ::sigaction(kSignals[k], &ours, &g_previous[k]) == 0;
        }
    });
}

int register_temporary(const std::string& path) {
    if (path.size() >= kSlotPath) return -1;
    install_handlers_once();
    for (int i = 0; i < kSlots; ++i) {
        int expected = 0;
        if (!g_slots[i].state.compare_exchange_strong(expected, 1)) continue;
        std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
        g_slots[i].state.store(2, std::memory_order_release);
        return i;
    }
    return -1;  // more than kSlots files at once: still removed on failure, not on a signal
}

void unregister_temporary(int slot) {
    if (slot >= 0) g_slots[slot].state.store(0, std::memory_order_release);
}

}  // namespace

void check_output_path(const std::string& path, uint64_t bytes_needed) {
    auto refuse = [&](const std::string& why) { throw OutputError(path + ": " + why); };
    if (path.empty()) throw OutputError("the output path is empty");
    if (path.back() == '/') refuse("names a folder; give a file name");

    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
        if (S_ISLNK(st.st_mode)) {
            char target[kSlotPath] = {};
            const ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
            refuse("is a symbolic link" + (n > 0 ? " to '" + std::string(target, size_t(n)) + "'" : std::string()) +
                   "; graphrun does not write through links: give the path of the file itself");
        }
        if (!S_ISREG(st.st_mode))
            refuse("is " + file_kind(st.st_mode) + "; graphrun writes only regular files and will not replace it");
        if ((st.st_mode & 0222) == 0 || ::faccessat(AT_FDCWD, path.c_str(), W_OK, AT_EACCESS) != 0)
            refuse("is read-only; graphrun does not replace a file it may not write (change its mode or "
                   "choose another path)");
    } else if (errno != ENOENT) {
        refuse(std::string("cannot check the path: ") + std::strerror(errno));
    }

    const std::string folder = folder_of(path);
    struct stat dir {};
    if (::stat(folder.c_str(), &dir) != 0 || !S_ISDIR(dir.st_mode))
        refuse("the folder '" + folder + "' does not exist");
    if (::faccessat(AT_FDCWD, folder.c_str(), W_OK | X_OK, AT_EACCESS) != 0)
        refuse("the folder '" + folder + "' is not writable");
    if (bytes_needed > 0) {
        struct statvfs fs {};
        if (::statvfs(folder.c_str(), &fs) == 0) {
            const uint64_t free_bytes = uint64_t(fs.f_bavail) * uint64_t(fs.f_frsize);
            if (free_bytes < bytes_needed)
                refuse("needs " + human(bytes_needed) + " but its file system has " + human(free_bytes) + " free");
        }
    }
}

OutputFile::OutputFile(std::string path, uint64_t bytes_needed) : path_(std::move(path)) {
    check_output_path(path_, bytes_needed);
    struct stat old {};
    const bool replacing = ::stat(path_.c_str(), &old) == 0;
    // O_EXCL | O_NOFOLLOW: a file or link already under the temporary's name is never opened.
    int fd = -1;
    for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
        tmp_ = path_ + ".tmp." + std::to_string(::getpid()) + (attempt ? "." + std::to_string(attempt) : "");
        fd = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) throw OutputError(path_ + ": cannot create " + tmp_ + ": " + std::strerror(errno));
    slot_ = register_temporary(tmp_);
    if (replacing) (void)::fchmod(fd, old.st_mode & 07777);  // the replaced file's permissions
    file_ = ::fdopen(fd, "wb");
    if (!file_) {
        const int err = errno;
        ::close(fd);
        ::unlink(tmp_.c_str());
        unregister_temporary(slot_);
        throw OutputError(path_ + ": cannot write " + tmp_ + ": " + std::strerror(err));
    }
}

OutputFile::~OutputFile() {
    if (file_) std::fclose(file_);
    if (!committed_) ::unlink(tmp_.c_str());
    unregister_temporary(slot_);
}

void OutputFile::fail(const std::string& what, int err) const {
    throw OutputError(path_ + ": " + what + ": " + std::strerror(err));
}

void OutputFile::write(const void* data, size_t n) {
    if (n && std::fwrite(data, 1, n, file_) != n) fail("write failed", errno);
}

void OutputFile::write_zeros(size_t n) {
    static const uint8_t kZeros[4096] = {};
    for (size_t left = n; left > 0;) {
        const size_t k = std::min(left, sizeof kZeros);
        write(kZeros, k);
        left -= k;
    }
}

void OutputFile::commit() {
    if (std::fflush(file_) != 0) fail("write failed", errno);
    if (::fsync(::fileno(file_)) != 0 && errno != EINVAL) fail("cannot flush to disk", errno);
    std::FILE* f = file_;
    file_ = nullptr;
    if (std::fclose(f) != 0) fail("write failed", errno);
    check_output_path(path_);  // what is at OUT may have changed while we wrote (a link put there, ...)
    if (::rename(tmp_.c_str(), path_.c_str()) != 0) fail("cannot rename " + tmp_ + " into place", errno);
    committed_ = true;
}

}  // namespace graphrun
