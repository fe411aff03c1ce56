#pragma once
// Shared by the parse_request() test files: parse a payload expecting one
// request type, or expecting a BadPacket error.
#include <catch2/catch.hpp>

#include <string_view>

#include "protocol/requests.h"

namespace test {

template <class T>
T parse_as(std::string_view payload) {
  INFO("payload: " << payload);
  auto result = protocol::parse_request(payload);
  if (!result.ok()) FAIL("unexpected error: " << result.error().message);
  REQUIRE(std::holds_alternative<T>(*result));
  return std::get<T>(*result);
}

inline void require_bad(std::string_view payload) {
  INFO("payload: " << payload);
  auto result = protocol::parse_request(payload);
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().code == btstub::ErrorCode::BadPacket);
  CHECK_FALSE(result.error().message.empty());
}

}  // namespace test
