// libFuzzer target for the metadata decoders: journal records, journal
// batches, checkpoint headers and checkpoint bodies (strict and lenient),
// plus applying decoded records to a model. Every input must be either
// refused or decoded into something that applies without crashing.
// Built only with -DPEREGRINE_FUZZ=ON and clang (tests/fuzz/meta/).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "peregrine/meta/checkpoint.h"
#include "peregrine/meta/journal.h"
#include "peregrine/meta/model.h"
#include "peregrine/meta/records.h"

using namespace peregrine::meta;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t which = data[0] % 4;
  std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data + 1), size - 1);
  Model m = Model::make_fresh(0);
  std::vector<VolRange> freed;
  switch (which) {
    case 0: {  // a sequence of records applied to a fresh model
      size_t pos = 0;
      Txn t;
      while (pos < in.size() && decode_txn(in, &pos, &t)) m.apply(t, &freed);
      break;
    }
    case 1: {  // a journal batch
      BatchHeader h;
      std::vector<Txn> txns;
      if (decode_batch(in, &h, &txns)) {
        for (const Txn& t : txns) m.apply(t, &freed);
      }
      break;
    }
    case 2: {  // a checkpoint header
      CheckpointHeader h;
      decode_checkpoint_header(in, &h);
      break;
    }
    case 3: {  // a checkpoint body, strict (mount) and lenient (fsck)
      for (bool strict : {true, false}) {
        auto model = decode_checkpoint_body(in, 1u << 20, strict);
        if (model) {
          (void)model->dump();
          (void)encode_checkpoint_body(*model);
        }
      }
      break;
    }
  }
  return 0;
}
