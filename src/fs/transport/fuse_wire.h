// The parts of the kernel's FUSE wire protocol that peregrine speaks itself,
// beyond what libfuse 3.14 knows: the INIT flags it negotiates (protocol
// 7.33 FUSE_HANDLE_KILLPRIV_V2, 7.36 flags2, 7.39 FUSE_DIRECT_IO_ALLOW_MMAP,
// 7.42 FUSE_OVER_IO_URING), FOPEN_PARALLEL_DIRECT_WRITES, the request
// fields libfuse 3.14 does not hand to operations (the kill-suid/sgid
// marks of WRITE, SETATTR and OPEN; 7.37 FUSE_TMPFILE), and the io_uring
// transport's structures.
//
// Defined here from the kernel's documented uapi (include/uapi/linux/fuse.h,
// Documentation/filesystems/fuse/fuse-io-uring.rst) rather than taken from the
// build machine's <linux/fuse.h>, which on Debian 12 predates io_uring.
// The layouts are ABI: the static_asserts pin every size. docs/transport.md
// lists the protocol facts the transport relies on.
//
// Thread rules: plain data, no state.
#pragma once

#include <cstddef>
#include <cstdint>

namespace peregrine::fs::wire {

// Opcodes the transport looks at (the rest pass through to libfuse).
inline constexpr uint32_t kOpForget = 2;
inline constexpr uint32_t kOpSetattr = 4;
inline constexpr uint32_t kOpOpen = 14;
inline constexpr uint32_t kOpRead = 15;
inline constexpr uint32_t kOpWrite = 16;
inline constexpr uint32_t kOpFsync = 20;
inline constexpr uint32_t kOpGetxattr = 22;
inline constexpr uint32_t kOpInit = 26;
inline constexpr uint32_t kOpFsyncdir = 30;
inline constexpr uint32_t kOpCreate = 35;
inline constexpr uint32_t kOpInterrupt = 36;
inline constexpr uint32_t kOpDestroy = 38;
inline constexpr uint32_t kOpIoctl = 39;
inline constexpr uint32_t kOpBatchForget = 42;
inline constexpr uint32_t kOpFallocate = 43;
inline constexpr uint32_t kOpCopyFileRange = 47;
inline constexpr uint32_t kOpTmpfile = 51;  // arguments and reply as CREATE

// INIT flags, as one 64-bit word: bits 32-63 travel in flags2, which both
// sides use only when FUSE_INIT_EXT is set in flags.
inline constexpr uint64_t kHandleKillpriv = uint64_t{1} << 19;
inline constexpr uint64_t kHandleKillprivV2 = uint64_t{1} << 28;
inline constexpr uint64_t kInitExt = uint64_t{1} << 30;
inline constexpr uint64_t kDirectIoAllowMmap = uint64_t{1} << 36;
inline constexpr uint64_t kOverIoUring = uint64_t{1} << 41;

// fuse_open_out.open_flags: IO bypasses the page cache; concurrent direct
// writes to one inode.
inline constexpr uint32_t kOpenDirectIo = 1u << 0;
inline constexpr uint32_t kOpenParallelDirectWrites = 1u << 6;

// Under FUSE_HANDLE_KILLPRIV_V2, the kernel's marks for "the caller lacks
// CAP_FSETID: remove suid/sgid as the VFS would".
inline constexpr uint32_t kWriteCache = 1u << 0;         // WriteIn.write_flags: page-cache writeback
inline constexpr uint32_t kWriteKillSuidgid = 1u << 2;   // WriteIn.write_flags
inline constexpr uint32_t kFattrSize = 1u << 3;          // SetattrIn.valid: a truncate
inline constexpr uint32_t kFattrKillSuidgid = 1u << 11;  // SetattrIn.valid (truncate)
inline constexpr uint32_t kOpenKillSuidgid = 1u << 0;    // OpenIn / CreateIn .open_flags (O_TRUNC)

// SetattrIn.valid bits that name an attribute the caller changes. A
// SETATTR with none of them is the kernel's file_remove_privs() (the caller
// lacks CAP_FSETID) or a chown(2) to -1, -1: with FUSE_HANDLE_KILLPRIV_V2
// the kernel leaves their mode change to the filesystem. FATTR_CTIME is not
// among them: with the writeback cache the kernel keeps ctime itself and
// sends it along, also with that chown.
inline constexpr uint32_t kFattrChanges = 0x1bf;  // MODE UID GID SIZE ATIME MTIME ATIME_NOW MTIME_NOW
static_assert(kFattrChanges == (1u << 0 | 1u << 1 | 1u << 2 | 1u << 3 | 1u << 4 | 1u << 5 | 1u << 7 | 1u << 8));

struct InHeader {
  uint32_t len;  // header + every argument, also under io_uring
  uint32_t opcode;
  uint64_t unique;
  uint64_t nodeid;
  uint32_t uid;
  uint32_t gid;
  uint32_t pid;
  uint16_t total_extlen;
  uint16_t padding;
};
static_assert(sizeof(InHeader) == 40);

struct OutHeader {
  uint32_t len;
  int32_t error;
  uint64_t unique;
};
static_assert(sizeof(OutHeader) == 16);

struct InitIn {
  uint32_t major;
  uint32_t minor;
  uint32_t max_readahead;
  uint32_t flags;
  uint32_t flags2;  // valid only with kInitExt in flags
  uint32_t unused[11];
};
static_assert(sizeof(InitIn) == 64);
// Kernels before 7.36 send only the first 16 bytes.
inline constexpr size_t kInitInFlags2End = offsetof(InitIn, flags2) + sizeof(uint32_t);

struct InitOut {
  uint32_t major;
  uint32_t minor;
  uint32_t max_readahead;
  uint32_t flags;
  uint16_t max_background;
  uint16_t congestion_threshold;
  uint32_t max_write;
  uint32_t time_gran;
  uint16_t max_pages;
  uint16_t map_alignment;
  uint32_t flags2;
  uint32_t unused[7];
};
static_assert(sizeof(InitOut) == 64);
static_assert(offsetof(InitOut, flags2) == 32);

// fuse_read_in. The kernel names a lock owner on every read it sends for
// read(2) on a direct-IO file and on none it sends to fill its page cache.
inline constexpr uint32_t kReadLockOwner = 1u << 1;  // ReadIn.read_flags
struct ReadIn {
  uint64_t fh;
  uint64_t offset;
  uint32_t size;
  uint32_t read_flags;
  uint64_t lock_owner;
  uint32_t flags;
  uint32_t padding;
};
static_assert(sizeof(ReadIn) == 40);

struct WriteIn {
  uint64_t fh;
  uint64_t offset;
  uint32_t size;
  uint32_t write_flags;
  uint64_t lock_owner;
  uint32_t flags;
  uint32_t padding;
};
static_assert(sizeof(WriteIn) == 40);

struct WriteOut {
  uint32_t size;
  uint32_t padding;
};
static_assert(sizeof(WriteOut) == 8);

// Only the start of fuse_setattr_in (88 bytes): the fields read here.
struct SetattrInValid {
  uint32_t valid;
  uint32_t padding;
};
static_assert(sizeof(SetattrInValid) == 8);

// fuse_getxattr_in; the attribute's name follows, NUL-terminated.
struct GetxattrIn {
  uint32_t size;
  uint32_t padding;
};
static_assert(sizeof(GetxattrIn) == 8);

struct OpenIn {
  uint32_t flags;
  uint32_t open_flags;
};
static_assert(sizeof(OpenIn) == 8);

struct CreateIn {
  uint32_t flags;
  uint32_t mode;
  uint32_t umask;
  uint32_t open_flags;
};
static_assert(sizeof(CreateIn) == 16);

struct OpenOut {
  uint64_t fh;
  uint32_t open_flags;
  int32_t backing_id;
};
static_assert(sizeof(OpenOut) == 16);

// ---------------------------------------------------------------- io_uring

// What one ring entry's header buffer holds. The kernel writes the request's
// fuse_in_header into in_out, the opcode's first argument into op_in, and
// the rest of the arguments into the entry's payload buffer; the daemon
// writes the reply's fuse_out_header into in_out and every reply argument
// into the payload buffer.
inline constexpr size_t kUringInOutHeaderBytes = 128;
inline constexpr size_t kUringOpInOutBytes = 128;

struct UringEntInOut {
  uint64_t flags;
  uint64_t commit_id;   // request: its unique; reply: ignored (the SQE carries it)
  uint32_t payload_sz;  // request: bytes the kernel put in the payload; reply: bytes we did
  uint32_t padding;
  uint64_t reserved;
};
static_assert(sizeof(UringEntInOut) == 32);

struct UringReqHeader {
  char in_out[kUringInOutHeaderBytes];
  char op_in[kUringOpInOutBytes];
  UringEntInOut ring_ent_in_out;
};
static_assert(sizeof(UringReqHeader) == 288);

// IORING_OP_URING_CMD cmd_op values.
inline constexpr uint32_t kUringCmdRegister = 1;
inline constexpr uint32_t kUringCmdCommitAndFetch = 2;

// In the SQE's 80-byte command area (rings are created with SQE128).
struct UringCmdReq {
  uint64_t flags;
  uint64_t commit_id;  // COMMIT_AND_FETCH: the unique of the request answered
  uint16_t qid;        // the queue (CPU) the entry belongs to
  uint8_t padding[6];
};
static_assert(sizeof(UringCmdReq) == 24);

// The kernel's smallest request buffer (FUSE_MIN_READ_BUFFER): a payload
// buffer is at least this large.
inline constexpr size_t kMinPayloadBytes = 8192;

}  // namespace peregrine::fs::wire
