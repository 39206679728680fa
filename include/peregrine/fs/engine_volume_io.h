// EngineVolumeIo: the metadata layer's blocking VolumeIo, served by the
// per-drive engine. Each call borrows a Submitter, submits one request and
// waits for its completion (on a drive thread) with an atomic wait.
//
// Thread rules: thread-safe (see VolumeIo). Must be destroyed before the
// SubmitterPool and the Engine it uses.
#pragma once

#include "peregrine/fs/submitter_pool.h"
#include "peregrine/volume/volume_io.h"

namespace peregrine::fs {

class EngineVolumeIo final : public VolumeIo {
 public:
  explicit EngineVolumeIo(SubmitterPool& pool) : pool_(pool) {}

  uint64_t size() const override { return pool_.engine().map().volume_size(); }
  int read(uint64_t offset, std::span<std::byte> out) override;
  int write(uint64_t offset, std::span<const std::byte> data) override;
  int flush() override;

 private:
  int run(IoOp op, uint64_t offset, std::byte* buf, uint64_t len);
  SubmitterPool& pool_;
};

}  // namespace peregrine::fs
