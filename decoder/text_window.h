#pragma once
// The part of a document a client reads in chunks at rising offsets
// (qXfer) that is still to be sent: the text from the last offset asked for,
// as far as written. Documents that are written as they are read
// (decoder/bts_document.h, stub/session/btrace_pt_trace.h) keep their text
// here, so dropping what was sent and refusing an offset that went back are
// done once.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "protocol/expected.h"

namespace decoder {

class TextWindow {
 public:
  explicit TextWindow(std::string head) : text_(std::move(head)) {}

  // Where the writer appends.
  std::string& text() { return text_; }
  // The writer appended the document's end.
  void finish() { done_ = true; }
  // Whether the text from the last read's offset holds the document's end.
  bool complete() const { return done_; }

  // The text from `offset`: at least `length` bytes, or all that is left,
  // calling `write_next()` (returning Expected<void>) for more until then.
  // An offset before the last one asked (its text is dropped) or beyond
  // the text written is an error. The view is valid until the next call.
  template <class WriteNext>
  btstub::Expected<std::string_view> read(uint64_t offset, std::size_t length, WriteNext&& write_next) {
    if (offset < offset_ || offset > offset_ + text_.size()) {
      return btstub::make_error(btstub::ErrorCode::InvalidArgument,
                                "Bad offset; read the branch trace from offset 0 first.");
    }
    text_.erase(0, static_cast<std::size_t>(offset - offset_));
    offset_ = offset;
    // One byte beyond `length`, so that a chunk that ends just before the
    // rest of the document is not taken for its end.
    while (!done_ && text_.size() <= length) {
      if (btstub::Expected<void> written = write_next(); !written) return written.error();
    }
    return std::string_view(text_);
  }

 private:
  std::string text_;  // the document from offset_ on, as far as written
  uint64_t offset_ = 0;
  bool done_ = false;
};

}  // namespace decoder
