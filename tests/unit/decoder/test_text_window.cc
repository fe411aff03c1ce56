// TextWindow: the unsent part of a document read in chunks. It writes only
// as far as a chunk needs, drops what was sent, refuses offsets it cannot
// serve, and passes on the writer's error.
#include <catch2/catch.hpp>

#include "decoder/text_window.h"

namespace test_text_window {  // this file's own names, apart in a unity build

using decoder::TextWindow;

namespace {

// Writes "0123456789" one digit per call, then finishes.
struct Digits {
  TextWindow& window;
  int next = 0;
  int calls = 0;
  btstub::Expected<void> operator()() {
    ++calls;
    if (next == 10) {
      window.finish();
      return {};
    }
    window.text() += static_cast<char>('0' + next++);
    return {};
  }
};

}  // namespace

TEST_CASE("TextWindow writes one byte past the chunk, then drops what was sent") {
  TextWindow window("<");
  Digits digits{window};
  auto first = window.read(0, 3, std::ref(digits));
  REQUIRE(first);
  CHECK(*first == "<012");  // 4 bytes: one more than asked, so not the end
  CHECK(digits.calls == 3);
  CHECK_FALSE(window.complete());

  auto second = window.read(3, 100, std::ref(digits));
  REQUIRE(second);
  CHECK(*second == "23456789");
  CHECK(window.complete());

  // Text before the last offset is gone; text beyond what was written never was.
  CHECK_FALSE(window.read(2, 1, std::ref(digits)));
  CHECK_FALSE(window.read(12, 1, std::ref(digits)));
  auto again = window.read(3, 100, std::ref(digits));
  REQUIRE(again);
  CHECK(*again == "23456789");
}

TEST_CASE("TextWindow passes on the writer's error") {
  TextWindow window("");
  auto failing = []() -> btstub::Expected<void> {
    return btstub::make_error(btstub::ErrorCode::IoError, "Cannot read code at 0x1000");
  };
  auto text = window.read(0, 10, failing);
  REQUIRE_FALSE(text);
  CHECK(text.error().message == "Cannot read code at 0x1000");
}

}  // namespace test_text_window
