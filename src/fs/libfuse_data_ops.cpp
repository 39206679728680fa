// READ and WRITE as libfuse decodes them: the classic transport's path,
// and the io-uring transport's for the writes its blocking-op threads run.
// The request's marks come from this thread's copy (transport/request_marks.h), set
// by the transport just before libfuse ran the request; the reply goes out
// through libfuse.
#include "fs_context.h"

namespace peregrine::fs {
namespace {

// The token is the fuse_req_t: libfuse frees it as the reply goes out.
class LibfuseReplier final : public DataReplier {
 public:
  void reply_bytes(uint64_t token, const std::byte* data, size_t n) override {
    fuse_reply_buf(req(token), reinterpret_cast<const char*>(data), n);
  }
  void reply_written(uint64_t token, uint32_t n) override { fuse_reply_write(req(token), n); }
  void reply_error(uint64_t token, int err) override { fuse_reply_err(req(token), err); }

  static uint64_t token(fuse_req_t req) { return reinterpret_cast<uintptr_t>(req); }

 private:
  static fuse_req_t req(uint64_t token) { return reinterpret_cast<fuse_req_t>(static_cast<uintptr_t>(token)); }
};

LibfuseReplier g_libfuse_replier;

void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
  ReadCall call;
  call.ino = ino;
  call.offset = static_cast<uint64_t>(off);
  call.size = static_cast<uint32_t>(size);
  call.marks = tls_request_marks;
  call.reply = DataReply{&g_libfuse_replier, LibfuseReplier::token(req)};
  serve_read(context(req), call);
}

void op_write(fuse_req_t req, fuse_ino_t ino, const char* data, size_t size, off_t off, fuse_file_info*) {
  WriteCall call;
  call.ino = ino;
  call.offset = static_cast<uint64_t>(off);
  call.data = data;
  call.size = static_cast<uint32_t>(size);
  call.marks = tls_request_marks;
  call.caller = caller_of(req);
  call.reply = DataReply{&g_libfuse_replier, LibfuseReplier::token(req)};
  serve_write(context(req), call);
}

}  // namespace

void add_data_ops(fuse_lowlevel_ops& ops) {
  ops.read = op_read;
  ops.write = op_write;
}

}  // namespace peregrine::fs
