#include "crash_report.h"

#include <execinfo.h>
#include <fcntl.h>
#include <ucontext.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstring>

namespace torchperf::cli {
namespace {

void write_text(const char* text, std::size_t n) {
  [[maybe_unused]] const auto w = ::write(STDERR_FILENO, text, n);
}
void write_text(const char* text) { write_text(text, std::strlen(text)); }

void write_hex(std::uintptr_t value) {
  char buf[2 + 16];
  buf[0] = '0';
  buf[1] = 'x';
  for (int i = 0; i < 16; ++i) buf[2 + i] = "0123456789abcdef"[(value >> (60 - 4 * i)) & 0xF];
  write_text(buf, sizeof(buf));
}

// The mappings of this process, read once at the crash: which file holds an address.
struct Mappings {
  char text[1 << 16];
  std::size_t size = 0;
  void read() {
    const int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    ssize_t n;
    while (size < sizeof(text) - 1 && (n = ::read(fd, text + size, sizeof(text) - 1 - size)) > 0)
      size += static_cast<std::size_t>(n);
    ::close(fd);
    text[size] = '\0';
  }
  static std::uintptr_t parse_hex(const char*& p) {
    std::uintptr_t v = 0;
    for (;; ++p) {
      const char c = *p;
      if (c >= '0' && c <= '9') v = v * 16 + static_cast<std::uintptr_t>(c - '0');
      else if (c >= 'a' && c <= 'f') v = v * 16 + static_cast<std::uintptr_t>(c - 'a' + 10);
      else return v;
    }
  }
  // The executable mapping holding an address: its file (or [vdso]) and the offset in it.
  bool find(std::uintptr_t address, const char** path, std::size_t* length,
            std::uintptr_t* file_offset) const {
    for (const char* line = text; *line;) {
      const char* p = line;
      const std::uintptr_t start = parse_hex(p);
      ++p;
      const std::uintptr_t end = parse_hex(p);
      const char* perms = p + 1;
      const char* eol = std::strchr(line, '\n');
      if (!eol) eol = line + std::strlen(line);
      if (address >= start && address < end && perms[2] == 'x') {
        const char* q = perms + 5;  // "start-end perms offset dev inode   path"
        const std::uintptr_t offset = parse_hex(q);
        const char* name = eol;
        for (const char* s = q; s < eol; ++s)
          if (*s == '/' || *s == '[') {
            name = s;
            break;
          }
        *path = name;
        *length = static_cast<std::size_t>(eol - name);
        *file_offset = address - start + offset;
        return true;
      }
      line = *eol ? eol + 1 : eol;
    }
    return false;
  }
  // Writes "file 0xoffset" for an address in code; false (and nothing) when it is in none.
  bool describe(std::uintptr_t address) const {
    const char* path = nullptr;
    std::size_t length = 0;
    std::uintptr_t offset = 0;
    if (!find(address, &path, &length, &offset)) return false;
    write_text(path, length);
    write_text(" ");
    write_hex(offset);
    return true;
  }
};

Mappings mappings;

// Only async-signal-safe calls (backtrace is, once libgcc is loaded: install_crash_report loads
// it with a first call). When the unwinder cannot leave the faulting frame (a jump to a bad
// address), the words on the stack that point into code stand in for the frames.
extern "C" void on_fatal_signal(int sig, siginfo_t* info, void* context) {
  const char* name = sigabbrev_np(sig);
  write_text("torchperf: internal error: SIG");
  write_text(name ? name : "?");
  write_text(" in the torchperf process (pid ");
  write_hex(static_cast<std::uintptr_t>(::getpid()));
  write_text(") at address ");
  write_hex(reinterpret_cast<std::uintptr_t>(info ? info->si_addr : nullptr));
  write_text("\n");
  mappings.read();
#if defined(__x86_64__)
  const auto* uc = static_cast<const ucontext_t*>(context);
  const auto pc = static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
  const auto sp = static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RSP]);
  write_text("  pc ");
  write_hex(pc);
  write_text(" ");
  if (!mappings.describe(pc)) write_text("(not in any code mapping)");
  write_text("\n  code addresses on the stack (addr2line -f -C -e FILE OFFSET):\n");
  const auto* words = reinterpret_cast<const std::uintptr_t*>(sp);
  int shown = 0;
  for (int i = 0; i < 512 && shown < 24; ++i) {
    const std::uintptr_t word = words[i];
    if (word < 4096) continue;
    const char* path = nullptr;
    std::size_t length = 0;
    std::uintptr_t offset = 0;
    if (!mappings.find(word, &path, &length, &offset)) continue;
    write_text("    ");
    mappings.describe(word);
    write_text("\n");
    ++shown;
  }
#else
  (void)context;
#endif
  write_text("  backtrace:\n");
  void* frames[64];
  const int n = ::backtrace(frames, 64);
  ::backtrace_symbols_fd(frames, n, STDERR_FILENO);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

void install_crash_report() {
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  void* warm[1];
  ::backtrace(warm, 1);
  // Its own stack: a stack overflow is reported too.
  static char stack[1 << 16];
  stack_t alt{};
  alt.ss_sp = stack;
  alt.ss_size = sizeof(stack);
  ::sigaltstack(&alt, nullptr);
  struct sigaction action {};
  action.sa_sigaction = on_fatal_signal;
  action.sa_flags = SA_ONSTACK | SA_RESETHAND | SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE}) ::sigaction(sig, &action, nullptr);
#endif
}

}  // namespace torchperf::cli
