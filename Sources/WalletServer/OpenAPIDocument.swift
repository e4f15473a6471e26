/// The OpenAPI 3.1 description of every route, served at `/openapi.json`. `OpenAPITests`
/// compares its paths, methods and security with the router's, and CI fuzzes the running
/// server against it with schemathesis.
enum OpenAPIDocument {
    static let json = #"""
{
  "openapi": "3.1.0",
  "info": {
    "title": "CreditsWallet API",
    "version": "1.0.0",
    "description": "A consumable-credits wallet: store purchases credit exactly once, spends are idempotent and never overdraw, support adjusts with a reason, auditors verify the ledger. Errors are RFC 9457 problem documents with a stable `code`."
  },
  "servers": [
    {
      "url": "http://127.0.0.1:8080"
    }
  ],
  "security": [
    {
      "bearer": []
    }
  ],
  "paths": {
    "/healthz": {
      "get": {
        "operationId": "health",
        "summary": "The process is up.",
        "security": [],
        "responses": {
          "200": {
            "description": "The process is up.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Status"
                }
              }
            }
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          }
        }
      }
    },
    "/readyz": {
      "get": {
        "operationId": "ready",
        "summary": "The database answers.",
        "security": [],
        "responses": {
          "200": {
            "description": "The database answers reads.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Status"
                }
              }
            }
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          },
          "503": {
            "$ref": "#/components/responses/Problem503"
          }
        }
      }
    },
    "/metrics": {
      "get": {
        "operationId": "metrics",
        "summary": "Prometheus metrics: request counts and latency by route and status, ledger transactions by kind.",
        "security": [],
        "responses": {
          "200": {
            "description": "Prometheus text exposition format.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              }
            },
            "content": {
              "text/plain": {
                "schema": {
                  "type": "string"
                }
              }
            }
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          }
        }
      }
    },
    "/openapi.json": {
      "get": {
        "operationId": "openapi",
        "summary": "This document.",
        "security": [],
        "responses": {
          "200": {
            "description": "The OpenAPI document.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "type": "object"
                }
              }
            }
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          }
        }
      }
    },
    "/v1/products": {
      "get": {
        "operationId": "listProducts",
        "summary": "The catalog. Any API key.",
        "responses": {
          "200": {
            "description": "Every product, ordered by id.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/ProductList"
                }
              }
            }
          },
          "401": {
            "$ref": "#/components/responses/Problem401"
          },
          "403": {
            "$ref": "#/components/responses/Problem403"
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          },
          "503": {
            "$ref": "#/components/responses/Problem503"
          }
        }
      }
    },
    "/v1/products/{product_id}": {
      "put": {
        "operationId": "setProduct",
        "summary": "Create or replace a product. Admin keys.",
        "parameters": [
          {
            "name": "product_id",
            "in": "path",
            "required": true,
            "description": "The store's product id.",
            "schema": {
              "$ref": "#/components/schemas/ProductId"
            }
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/ProductBody"
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "The product as stored.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Product"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem400"
          },
          "401": {
            "$ref": "#/components/responses/Problem401"
          },
          "403": {
            "$ref": "#/components/responses/Problem403"
          },
          "413": {
            "$ref": "#/components/responses/Problem413"
          },
          "415": {
            "$ref": "#/components/responses/Problem415"
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          },
          "503": {
            "$ref": "#/components/responses/Problem503"
          }
        }
      }
    },
    "/v1/purchases": {
      "post": {
        "operationId": "grantPurchase",
        "summary": "Credit a store purchase that the calling backend verified, exactly once per store transaction. Service keys.",
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/PurchaseBody"
              }
            }
          }
        },
        "responses": {
          "201": {
            "description": "The purchase was credited. A replay answers the same body with `Idempotent-Replayed: true`.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              },
              "Idempotent-Replayed": {
                "$ref": "#/components/headers/IdempotentReplayed"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/MutationResponse"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem400"
          },
          "401": {
            "$ref": "#/components/responses/Problem401"
          },
          "403": {
            "$ref": "#/components/responses/Problem403"
          },
          "409": {
            "$ref": "#/components/responses/Problem409"
          },
          "413": {
            "$ref": "#/components/responses/Problem413"
          },
          "415": {
            "$ref": "#/components/responses/Problem415"
          },
          "422": {
            "$ref": "#/components/responses/Problem422"
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          },
          "503": {
            "$ref": "#/components/responses/Problem503"
          }
        }
      }
    },
    "/v1/purchases/apple": {
      "post": {
        "operationId": "redeemApplePurchase",
        "summary": "Verify a StoreKit 2 signed transaction offline and credit it, once per Apple transaction id. Service keys, or the player's own token (player_id must be theirs).",
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/ApplePurchaseBody"
              }
            }
          }
        },
        "responses": {
          "201": {
            "description": "The purchase was verified and credited. A replay answers the same body with `Idempotent-Replayed: true`.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              },
              "Idempotent-Replayed": {
                "$ref": "#/components/headers/IdempotentReplayed"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/MutationResponse"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem400"
          },
          "401": {
            "$ref": "#/components/responses/Problem401"
          },
          "403": {
            "$ref": "#/components/responses/Problem403"
          },
          "409": {
            "$ref": "#/components/responses/Problem409"
          },
          "413": {
            "$ref": "#/components/responses/Problem413"
          },
          "415": {
            "$ref": "#/components/responses/Problem415"
          },
          "422": {
            "$ref": "#/components/responses/Problem422"
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          },
          "503": {
            "$ref": "#/components/responses/Problem503"
          },
          "501": {
            "$ref": "#/components/responses/Problem501"
          }
        }
      }
    },
    "/v1/purchases/apple/receipt": {
      "post": {
        "operationId": "redeemAppleReceipt",
        "summary": "Credit a StoreKit 1 app receipt: the wallet verifies its PKCS#7 signature and certificate chain (Apple Root CA, or a root added with --apple-root-certs; a receipt that does not verify is 400 `invalid_request` and Apple is not asked), reads the transaction ids it names from the signed bytes, asks the App Store Server API for that customer's consumable purchases (back to the oldest one the receipt names; past 50 pages, 503 `store_unavailable`), verifies each signed transaction and credits, in one write, every one the receipt names that is not yet credited. At most 10 a minute per player with the player's own token; service keys are not limited per player. Service keys, or the player's own token.",
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/AppleReceiptBody"
              }
            }
          }
        },
        "responses": {
          "201": {
            "description": "Something was credited now; the answer lists it, what was credited before and what was refused.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/ReceiptRedemption"
                }
              }
            }
          },
          "200": {
            "description": "Nothing new was credited (all credited before, or refused).",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/ReceiptRedemption"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem400"
          },
          "401": {
            "$ref": "#/components/responses/Problem401"
          },
          "403": {
            "$ref": "#/components/responses/Problem403"
          },
          "404": {
            "$ref": "#/components/responses/Problem404"
          },
          "413": {
            "description": "The body is larger than 1 MiB + 4 KiB (`payload_too_large`).",
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                }
              }
            }
          },
          "415": {
            "$ref": "#/components/responses/Problem415"
          },
          "429": {
            "description": "More than 10 receipts a minute for this player from the player's own token (`rate_limited`); service keys are not limited per player. Retry after `Retry-After` seconds.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              },
              "Retry-After": {
                "schema": {
                  "type": "integer"
                }
              }
            },
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                }
              }
            }
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          },
          "501": {
            "$ref": "#/components/responses/Problem501"
          },
          "503": {
            "$ref": "#/components/responses/Problem503"
          }
        }
      }
    },
    "/v1/apple/orders/{order_id}": {
      "get": {
        "operationId": "lookUpAppleOrder",
        "summary": "The transactions of an App Store order (Look Up Order ID), verified, each with whether and to whom it was credited. Support and admin keys.",
        "parameters": [
          {
            "name": "order_id",
            "in": "path",
            "required": true,
            "description": "The order id from Apple's emailed receipt.",
            "schema": {
              "type": "string",
              "minLength": 1,
              "maxLength": 64,
              "pattern": "^[A-Za-z0-9._-]+$"
            }
          }
        ],
        "responses": {
          "200": {
            "description": "The order's transactions.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/OrderLookup"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem400"
          },
          "401": {
            "$ref": "#/components/responses/Problem401"
          },
          "403": {
            "$ref": "#/components/responses/Problem403"
          },
          "404": {
            "$ref": "#/components/responses/Problem404"
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          },
          "501": {
            "$ref": "#/components/responses/Problem501"
          },
          "503": {
            "$ref": "#/components/responses/Problem503"
          }
        }
      }
    },
    "/v1/apple/orders/{order_id}/credit": {
      "post": {
        "operationId": "creditAppleOrder",
        "summary": "Credit an App Store order's transactions not yet credited to a player, in one write; answers as the lookup does (`credited_now` for those). Support and admin keys.",
        "parameters": [
          {
            "name": "order_id",
            "in": "path",
            "required": true,
            "description": "The order id from Apple's emailed receipt.",
            "schema": {
              "type": "string",
              "minLength": 1,
              "maxLength": 64,
              "pattern": "^[A-Za-z0-9._-]+$"
            }
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/CreditOrderBody"
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "The order's transactions after crediting.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/OrderLookup"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem400"
          },
          "401": {
            "$ref": "#/components/responses/Problem401"
          },
          "403": {
            "$ref": "#/components/responses/Problem403"
          },
          "404": {
            "$ref": "#/components/responses/Problem404"
          },
          "413": {
            "$ref": "#/components/responses/Problem413"
          },
          "415": {
            "$ref": "#/components/responses/Problem415"
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          },
          "501": {
            "$ref": "#/components/responses/Problem501"
          },
          "503": {
            "$ref": "#/components/responses/Problem503"
          }
        }
      }
    },
    "/v1/me": {
      "get": {
        "operationId": "me",
        "summary": "The calling API key (id, name, role), without its secret. Any key.",
        "responses": {
          "200": {
            "description": "The calling key.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/APIKey"
                }
              }
            }
          },
          "401": {
            "$ref": "#/components/responses/Problem401"
          },
          "403": {
            "$ref": "#/components/responses/Problem403"
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          },
          "503": {
            "$ref": "#/components/responses/Problem503"
          }
        }
      }
    },
    "/v1/keys": {
      "get": {
        "operationId": "listKeys",
        "summary": "Every API key, revoked ones included, oldest first, without secrets. Admin keys.",
        "responses": {
          "200": {
            "description": "The keys.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/APIKeyList"
                }
              }
            }
          },
          "401": {
            "$ref": "#/components/responses/Problem401"
          },
          "403": {
            "$ref": "#/components/responses/Problem403"
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          },
          "503": {
            "$ref": "#/components/responses/Problem503"
          }
        }
      },
      "post": {
        "operationId": "createKey",
        "summary": "Create an API key; the answer shows its secret this once (only its SHA-256 is stored). Admin keys.",
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/KeyBody"
              }
            }
          }
        },
        "responses": {
          "201": {
            "description": "The key and its secret.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/CreatedAPIKey"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem400"
          },
          "401": {
            "$ref": "#/components/responses/Problem401"
          },
          "403": {
            "$ref": "#/components/responses/Problem403"
          },
          "413": {
            "$ref": "#/components/responses/Problem413"
          },
          "415": {
            "$ref": "#/components/responses/Problem415"
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          },
          "503": {
            "$ref": "#/components/responses/Problem503"
          }
        }
      }
    },
    "/v1/keys/{key_id}/revoke": {
      "post": {
        "operationId": "revokeKey",
        "summary": "Revoke an API key at once (a running server refuses it within a second); revoking again answers the first revocation. Admin keys.",
        "parameters": [
          {
            "name": "key_id",
            "in": "path",
            "required": true,
            "description": "The key's id (`key_…`).",
            "schema": {
              "type": "string",
              "minLength": 1,
              "maxLength": 64
            }
          }
        ],
        "responses": {
          "200": {
            "description": "The revoked key.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/APIKey"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem400"
          },
          "401": {
            "$ref": "#/components/responses/Problem401"
          },
          "403": {
            "$ref": "#/components/responses/Problem403"
          },
          "404": {
            "$ref": "#/components/responses/Problem404"
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          },
          "503": {
            "$ref": "#/components/responses/Problem503"
          }
        }
      }
    },
    "/v1/ledger/export/links": {
      "post": {
        "operationId": "makeExportLink",
        "summary": "A one-time download link for an export (what a browser can follow: a link carries no Authorization header, and a key never goes in a URL). Used once, within 60 seconds, on this instance. Auditor and admin keys.",
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/ExportLinkBody"
              }
            }
          }
        },
        "responses": {
          "201": {
            "description": "The link.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "url",
                    "expires_in_seconds"
                  ],
                  "properties": {
                    "url": {
                      "type": "string",
                      "description": "A path on this server: `/v1/ledger/export/links/{token}`."
                    },
                    "expires_in_seconds": {
                      "type": "integer"
                    }
                  }
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem400"
          },
          "401": {
            "$ref": "#/components/responses/Problem401"
          },
          "403": {
            "$ref": "#/components/responses/Problem403"
          },
          "413": {
            "$ref": "#/components/responses/Problem413"
          },
          "415": {
            "$ref": "#/components/responses/Problem415"
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          },
          "429": {
            "description": "20 links of this caller are waiting (`rate_limited`); retry after `Retry-After` seconds.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              },
              "Retry-After": {
                "schema": {
                  "type": "integer"
                }
              }
            },
            "content": {
              "application/problem+json": {
                "schema": {
                  "$ref": "#/components/schemas/Problem"
                }
              }
            }
          },
          "503": {
            "$ref": "#/components/responses/Problem503"
          }
        }
      }
    },
    "/v1/ledger/export/links/{token}": {
      "get": {
        "operationId": "followExportLink",
        "security": [],
        "summary": "Download the export a link was made for, streamed, once. Open: the token is the credential.",
        "parameters": [
          {
            "name": "token",
            "in": "path",
            "required": true,
            "description": "The link's token.",
            "schema": {
              "type": "string",
              "minLength": 1,
              "maxLength": 64
            }
          }
        ],
        "responses": {
          "200": {
            "description": "The export, as `GET /v1/ledger/export` streams it.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              }
            },
            "content": {
              "text/csv": {
                "schema": {
                  "type": "string"
                }
              },
              "application/jsonl": {
                "schema": {
                  "type": "string"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem400"
          },
          "404": {
            "$ref": "#/components/responses/Problem404"
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          },
          "503": {
            "$ref": "#/components/responses/Problem503"
          }
        }
      }
    },
    "/v1/ledger/volume": {
      "get": {
        "operationId": "ledgerVolume",
        "summary": "Transactions per UTC day, kind and currency over a period of at most 366 days: counts and sums of the amounts' magnitudes. Auditor and admin keys.",
        "parameters": [
          {
            "name": "from",
            "in": "query",
            "required": true,
            "description": "The period's start (included), RFC 3339.",
            "schema": {
              "type": "string",
              "format": "date-time"
            }
          },
          {
            "name": "to",
            "in": "query",
            "required": true,
            "description": "The period's end (excluded), RFC 3339.",
            "schema": {
              "type": "string",
              "format": "date-time"
            }
          }
        ],
        "responses": {
          "200": {
            "description": "The days, in order.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "days"
                  ],
                  "properties": {
                    "days": {
                      "type": "array",
                      "items": {
                        "type": "object",
                        "required": [
                          "day",
                          "kind",
                          "currency",
                          "count",
                          "amount"
                        ],
                        "properties": {
                          "day": {
                            "type": "string",
                            "format": "date"
                          },
                          "kind": {
                            "type": "string",
                            "enum": [
                              "purchase",
                              "spend",
                              "adjustment",
                              "refund",
                              "refund_reversal",
                              "bonus",
                              "expiry",
                              "hold",
                              "capture",
                              "release"
                            ]
                          },
                          "currency": {
                            "type": "string"
                          },
                          "count": {
                            "type": "integer"
                          },
                          "amount": {
                            "type": "integer"
                          }
                        }
                      }
                    }
                  }
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem400"
          },
          "401": {
            "$ref": "#/components/responses/Problem401"
          },
          "403": {
            "$ref": "#/components/responses/Problem403"
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          },
          "503": {
            "$ref": "#/components/responses/Problem503"
          }
        }
      }
    },
    "/v1/wallets/{player_id}/bonuses": {
      "post": {
        "operationId": "bonus",
        "summary": "Give bonus credits: a lot of their own that may expire (`expires_at`, in the future); purchased credits never do. Service, support and admin keys.",
        "parameters": [
          {
            "name": "player_id",
            "in": "path",
            "required": true,
            "description": "The player's id.",
            "schema": {
              "$ref": "#/components/schemas/PlayerId"
            }
          },
          {
            "$ref": "#/components/parameters/IdempotencyKeyHeader"
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/BonusBody"
              }
            }
          }
        },
        "responses": {
          "201": {
            "description": "The bonus transaction and the balance after it. A replay answers the same body with `Idempotent-Replayed: true`.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              },
              "Idempotent-Replayed": {
                "$ref": "#/components/headers/IdempotentReplayed"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/MutationResponse"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem400"
          },
          "401": {
            "$ref": "#/components/responses/Problem401"
          },
          "403": {
            "$ref": "#/components/responses/Problem403"
          },
          "409": {
            "$ref": "#/components/responses/Problem409"
          },
          "413": {
            "$ref": "#/components/responses/Problem413"
          },
          "415": {
            "$ref": "#/components/responses/Problem415"
          },
          "422": {
            "$ref": "#/components/responses/Problem422"
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          },
          "503": {
            "$ref": "#/components/responses/Problem503"
          }
        }
      }
    },
    "/v1/wallets/{player_id}/lots": {
      "get": {
        "operationId": "lots",
        "summary": "The player's open lots: what remains of each credit, per currency in the order debits spend them (expired ones not yet booked last).",
        "parameters": [
          {
            "name": "player_id",
            "in": "path",
            "required": true,
            "description": "The player's id.",
            "schema": {
              "$ref": "#/components/schemas/PlayerId"
            }
          }
        ],
        "responses": {
          "200": {
            "description": "The lots.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "player_id",
                    "lots"
                  ],
                  "properties": {
                    "player_id": {
                      "type": "string"
                    },
                    "lots": {
                      "type": "array",
                      "items": {
                        "type": "object",
                        "required": [
                          "id",
                          "currency",
                          "category",
                          "amount",
                          "remaining",
                          "created_at",
                          "source_seq",
                          "expired"
                        ],
                        "properties": {
                          "id": {
                            "type": "integer"
                          },
                          "currency": {
                            "type": "string"
                          },
                          "category": {
                            "type": "string",
                            "enum": [
                              "paid",
                              "bonus",
                              "adjustment",
                              "opening"
                            ]
                          },
                          "amount": {
                            "type": "integer"
                          },
                          "remaining": {
                            "type": "integer"
                          },
                          "created_at": {
                            "type": "string",
                            "format": "date-time"
                          },
                          "expires_at": {
                            "type": "string",
                            "format": "date-time"
                          },
                          "source_seq": {
                            "type": "integer"
                          },
                          "expired": {
                            "type": "boolean"
                          }
                        }
                      }
                    }
                  }
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem400"
          },
          "401": {
            "$ref": "#/components/responses/Problem401"
          },
          "403": {
            "$ref": "#/components/responses/Problem403"
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          },
          "503": {
            "$ref": "#/components/responses/Problem503"
          }
        }
      }
    },
    "/v1/wallets/{player_id}/holds": {
      "post": {
        "operationId": "createHold",
        "summary": "Reserve credits until the outcome is known: moved to `@holds` at once, drawn from lots in burn order, never below zero. Service keys, or the player's own token.",
        "parameters": [
          {
            "$ref": "#/components/parameters/PlayerIdPath"
          },
          {
            "$ref": "#/components/parameters/IdempotencyKeyHeader"
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/HoldBody"
              }
            }
          }
        },
        "responses": {
          "201": {
            "description": "The hold (`id`, `status`, `expires_at`), its transaction and the balance after.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              },
              "Idempotent-Replayed": {
                "$ref": "#/components/headers/IdempotentReplayed"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/HoldResult"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem400"
          },
          "401": {
            "$ref": "#/components/responses/Problem401"
          },
          "403": {
            "$ref": "#/components/responses/Problem403"
          },
          "404": {
            "$ref": "#/components/responses/Problem404"
          },
          "409": {
            "$ref": "#/components/responses/Problem409"
          },
          "413": {
            "$ref": "#/components/responses/Problem413"
          },
          "415": {
            "$ref": "#/components/responses/Problem415"
          },
          "422": {
            "$ref": "#/components/responses/Problem422"
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          },
          "503": {
            "$ref": "#/components/responses/Problem503"
          }
        }
      },
      "get": {
        "operationId": "holds",
        "summary": "The player's open holds, then the 50 most recent resolved ones. Service keys, or the player's own token.",
        "parameters": [
          {
            "$ref": "#/components/parameters/PlayerIdPath"
          }
        ],
        "responses": {
          "200": {
            "description": "The holds.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "player_id",
                    "holds"
                  ],
                  "properties": {
                    "player_id": {
                      "type": "string"
                    },
                    "holds": {
                      "type": "array",
                      "items": {
                        "$ref": "#/components/schemas/Hold"
                      }
                    }
                  }
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem400"
          },
          "401": {
            "$ref": "#/components/responses/Problem401"
          },
          "403": {
            "$ref": "#/components/responses/Problem403"
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          },
          "503": {
            "$ref": "#/components/responses/Problem503"
          }
        }
      }
    },
    "/v1/holds/{hold_id}/capture": {
      "post": {
        "operationId": "captureHold",
        "summary": "Capture a hold, all of it or `amount` (more than held is 422 `capture_exceeds_hold`): that part goes to `@spend`, the rest back to the lots it came from. Once: the same key replays; another gets 409 `hold_captured`, `hold_released` or `hold_expired`. What comes back repays a debt first; what would go back to a lot that has expired meanwhile expires with the transaction (to `@expired`). Who resolves it: a hold placed with a service key only a service key (a player's token gets 403 `forbidden`); a hold the player placed, that player or a service key; another player's hold is 404 to a player.",
        "parameters": [
          {
            "name": "hold_id",
            "in": "path",
            "required": true,
            "description": "The hold's id.",
            "schema": {
              "type": "string",
              "minLength": 1,
              "maxLength": 64
            }
          },
          {
            "$ref": "#/components/parameters/IdempotencyKeyHeader"
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/CaptureBody"
              }
            }
          }
        },
        "responses": {
          "201": {
            "description": "The captured hold, its transaction and the balance after.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              },
              "Idempotent-Replayed": {
                "$ref": "#/components/headers/IdempotentReplayed"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/HoldResult"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem400"
          },
          "401": {
            "$ref": "#/components/responses/Problem401"
          },
          "403": {
            "$ref": "#/components/responses/Problem403"
          },
          "404": {
            "$ref": "#/components/responses/Problem404"
          },
          "409": {
            "$ref": "#/components/responses/Problem409"
          },
          "413": {
            "$ref": "#/components/responses/Problem413"
          },
          "415": {
            "$ref": "#/components/responses/Problem415"
          },
          "422": {
            "$ref": "#/components/responses/Problem422"
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          },
          "503": {
            "$ref": "#/components/responses/Problem503"
          }
        }
      }
    },
    "/v1/holds/{hold_id}/release": {
      "post": {
        "operationId": "releaseHold",
        "summary": "Release a hold: everything back to the lots it came from. Once, as a capture. What comes back repays a debt first; what would go back to a lot that has expired meanwhile expires with the transaction (to `@expired`). Who resolves it: a hold placed with a service key only a service key (a player's token gets 403 `forbidden`); a hold the player placed, that player or a service key; another player's hold is 404 to a player.",
        "parameters": [
          {
            "name": "hold_id",
            "in": "path",
            "required": true,
            "description": "The hold's id.",
            "schema": {
              "type": "string",
              "minLength": 1,
              "maxLength": 64
            }
          },
          {
            "$ref": "#/components/parameters/IdempotencyKeyHeader"
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/ReleaseBody"
              }
            }
          }
        },
        "responses": {
          "201": {
            "description": "The released hold, its transaction and the balance after.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              },
              "Idempotent-Replayed": {
                "$ref": "#/components/headers/IdempotentReplayed"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/HoldResult"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem400"
          },
          "401": {
            "$ref": "#/components/responses/Problem401"
          },
          "403": {
            "$ref": "#/components/responses/Problem403"
          },
          "404": {
            "$ref": "#/components/responses/Problem404"
          },
          "409": {
            "$ref": "#/components/responses/Problem409"
          },
          "413": {
            "$ref": "#/components/responses/Problem413"
          },
          "415": {
            "$ref": "#/components/responses/Problem415"
          },
          "422": {
            "$ref": "#/components/responses/Problem422"
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          },
          "503": {
            "$ref": "#/components/responses/Problem503"
          }
        }
      }
    },
    "/v1/notifications/apple": {
      "post": {
        "operationId": "appleNotification",
        "summary": "App Store Server Notifications V2: verified by Apple's signature, applied once by notificationUUID. Open.",
        "security": [],
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/AppleNotificationBody"
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "Applied and recorded (or already were); Apple stops retrying.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/NotificationOutcome"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem400"
          },
          "413": {
            "$ref": "#/components/responses/Problem413"
          },
          "415": {
            "$ref": "#/components/responses/Problem415"
          },
          "422": {
            "$ref": "#/components/responses/Problem422"
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          },
          "501": {
            "$ref": "#/components/responses/Problem501"
          },
          "503": {
            "$ref": "#/components/responses/Problem503"
          }
        }
      }
    },
    "/v1/refunds": {
      "post": {
        "operationId": "refundPurchase",
        "summary": "Take back a purchase's credits, once per store transaction. Service, support and admin keys.",
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/RefundBody"
              }
            }
          }
        },
        "responses": {
          "201": {
            "description": "The refund was recorded. A replay answers the same body with `Idempotent-Replayed: true`.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              },
              "Idempotent-Replayed": {
                "$ref": "#/components/headers/IdempotentReplayed"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/MutationResponse"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem400"
          },
          "401": {
            "$ref": "#/components/responses/Problem401"
          },
          "403": {
            "$ref": "#/components/responses/Problem403"
          },
          "404": {
            "$ref": "#/components/responses/Problem404"
          },
          "409": {
            "$ref": "#/components/responses/Problem409"
          },
          "413": {
            "$ref": "#/components/responses/Problem413"
          },
          "415": {
            "$ref": "#/components/responses/Problem415"
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          },
          "503": {
            "$ref": "#/components/responses/Problem503"
          }
        }
      }
    },
    "/v1/wallets/{player_id}": {
      "get": {
        "operationId": "getWallet",
        "summary": "A player's balances. The player's own token, service, support and auditor keys.",
        "parameters": [
          {
            "$ref": "#/components/parameters/PlayerIdPath"
          }
        ],
        "responses": {
          "200": {
            "description": "Balances by currency; `credits` is always present.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/WalletBalances"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem400"
          },
          "401": {
            "$ref": "#/components/responses/Problem401"
          },
          "403": {
            "$ref": "#/components/responses/Problem403"
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          },
          "503": {
            "$ref": "#/components/responses/Problem503"
          }
        }
      }
    },
    "/v1/wallets/{player_id}/transactions": {
      "get": {
        "operationId": "listTransactions",
        "summary": "A player's transactions, newest first, a page at a time. Same access as the wallet.",
        "parameters": [
          {
            "$ref": "#/components/parameters/PlayerIdPath"
          },
          {
            "name": "limit",
            "in": "query",
            "required": false,
            "description": "Page size.",
            "schema": {
              "type": "integer",
              "minimum": 1,
              "maximum": 500,
              "default": 50
            }
          },
          {
            "name": "after",
            "in": "query",
            "required": false,
            "description": "The previous page's `next`: continue with older transactions.",
            "schema": {
              "type": "integer",
              "minimum": 1,
              "format": "int64"
            }
          },
          {
            "name": "kind",
            "in": "query",
            "required": false,
            "description": "Only this kind.",
            "schema": {
              "$ref": "#/components/schemas/TransactionKind"
            }
          },
          {
            "name": "from",
            "in": "query",
            "required": false,
            "description": "Start of the period, RFC 3339, inclusive.",
            "schema": {
              "type": "string",
              "format": "date-time"
            }
          },
          {
            "name": "to",
            "in": "query",
            "required": false,
            "description": "End of the period, RFC 3339, exclusive.",
            "schema": {
              "type": "string",
              "format": "date-time"
            }
          }
        ],
        "responses": {
          "200": {
            "description": "One page, newest first.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/HistoryPage"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem400"
          },
          "401": {
            "$ref": "#/components/responses/Problem401"
          },
          "403": {
            "$ref": "#/components/responses/Problem403"
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          },
          "503": {
            "$ref": "#/components/responses/Problem503"
          }
        }
      }
    },
    "/v1/wallets/{player_id}/spend": {
      "post": {
        "operationId": "spend",
        "summary": "Debit the wallet, once per idempotency key, never below zero. The player's own token, or service keys.",
        "parameters": [
          {
            "$ref": "#/components/parameters/PlayerIdPath"
          },
          {
            "$ref": "#/components/parameters/IdempotencyKeyHeader"
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/SpendBody"
              }
            }
          }
        },
        "responses": {
          "201": {
            "description": "The credits were spent. A replay answers the same body with `Idempotent-Replayed: true`.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              },
              "Idempotent-Replayed": {
                "$ref": "#/components/headers/IdempotentReplayed"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/MutationResponse"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem400"
          },
          "401": {
            "$ref": "#/components/responses/Problem401"
          },
          "403": {
            "$ref": "#/components/responses/Problem403"
          },
          "409": {
            "$ref": "#/components/responses/Problem409"
          },
          "413": {
            "$ref": "#/components/responses/Problem413"
          },
          "415": {
            "$ref": "#/components/responses/Problem415"
          },
          "422": {
            "$ref": "#/components/responses/Problem422"
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          },
          "503": {
            "$ref": "#/components/responses/Problem503"
          }
        }
      }
    },
    "/v1/wallets/{player_id}/adjustments": {
      "post": {
        "operationId": "adjust",
        "summary": "Credit or debit the wallet as support, with a reason code and a note. Support and admin keys.",
        "parameters": [
          {
            "$ref": "#/components/parameters/PlayerIdPath"
          },
          {
            "$ref": "#/components/parameters/IdempotencyKeyHeader"
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/AdjustmentBody"
              }
            }
          }
        },
        "responses": {
          "201": {
            "description": "The adjustment was recorded. A replay answers the same body with `Idempotent-Replayed: true`.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              },
              "Idempotent-Replayed": {
                "$ref": "#/components/headers/IdempotentReplayed"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/MutationResponse"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem400"
          },
          "401": {
            "$ref": "#/components/responses/Problem401"
          },
          "403": {
            "$ref": "#/components/responses/Problem403"
          },
          "409": {
            "$ref": "#/components/responses/Problem409"
          },
          "413": {
            "$ref": "#/components/responses/Problem413"
          },
          "415": {
            "$ref": "#/components/responses/Problem415"
          },
          "422": {
            "$ref": "#/components/responses/Problem422"
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          },
          "503": {
            "$ref": "#/components/responses/Problem503"
          }
        }
      }
    },
    "/v1/wallets/{player_id}/statement": {
      "get": {
        "operationId": "statement",
        "summary": "Opening balance, transactions and closing balance per currency for a period. The player's own token, support and auditor keys.",
        "parameters": [
          {
            "$ref": "#/components/parameters/PlayerIdPath"
          },
          {
            "name": "from",
            "in": "query",
            "required": false,
            "description": "Start of the period, RFC 3339, inclusive.",
            "schema": {
              "type": "string",
              "format": "date-time"
            }
          },
          {
            "name": "to",
            "in": "query",
            "required": false,
            "description": "End of the period, RFC 3339, exclusive.",
            "schema": {
              "type": "string",
              "format": "date-time"
            }
          }
        ],
        "responses": {
          "200": {
            "description": "The statement; at most 10000 transactions (400 beyond: ask for a shorter period).",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Statement"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem400"
          },
          "401": {
            "$ref": "#/components/responses/Problem401"
          },
          "403": {
            "$ref": "#/components/responses/Problem403"
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          },
          "503": {
            "$ref": "#/components/responses/Problem503"
          }
        }
      }
    },
    "/v1/ledger/export": {
      "get": {
        "operationId": "exportLedger",
        "summary": "Stream the ledger, one line per posting, as CSV or JSON Lines, starting with a checkpoint. Auditor and admin keys.",
        "parameters": [
          {
            "name": "from",
            "in": "query",
            "required": false,
            "description": "Start of the period, RFC 3339, inclusive.",
            "schema": {
              "type": "string",
              "format": "date-time"
            }
          },
          {
            "name": "to",
            "in": "query",
            "required": false,
            "description": "End of the period, RFC 3339, exclusive.",
            "schema": {
              "type": "string",
              "format": "date-time"
            }
          },
          {
            "name": "player",
            "in": "query",
            "required": false,
            "description": "Only this player's transactions (the export is then marked filtered).",
            "schema": {
              "$ref": "#/components/schemas/PlayerId"
            }
          },
          {
            "name": "currency",
            "in": "query",
            "required": false,
            "description": "Only transactions in this currency (filtered).",
            "schema": {
              "$ref": "#/components/schemas/Currency"
            }
          },
          {
            "name": "format",
            "in": "query",
            "required": false,
            "schema": {
              "type": "string",
              "enum": [
                "csv",
                "jsonl"
              ],
              "default": "csv"
            }
          }
        ],
        "responses": {
          "200": {
            "description": "The export, streamed. Verify it offline with `wallet verify --export FILE --head HASH`.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              }
            },
            "content": {
              "text/csv": {
                "schema": {
                  "type": "string"
                }
              },
              "application/jsonl": {
                "schema": {
                  "type": "string"
                }
              }
            }
          },
          "400": {
            "$ref": "#/components/responses/Problem400"
          },
          "401": {
            "$ref": "#/components/responses/Problem401"
          },
          "403": {
            "$ref": "#/components/responses/Problem403"
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          },
          "503": {
            "$ref": "#/components/responses/Problem503"
          }
        }
      }
    },
    "/v1/ledger/verify": {
      "get": {
        "operationId": "verifyLedger",
        "summary": "Recompute the hash chain, every transaction's sums and every balance. Auditor and admin keys.",
        "responses": {
          "200": {
            "description": "The report; `ok` is false and `first_bad_seq` set when the ledger was altered.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/VerifyReport"
                }
              }
            }
          },
          "401": {
            "$ref": "#/components/responses/Problem401"
          },
          "403": {
            "$ref": "#/components/responses/Problem403"
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          },
          "503": {
            "$ref": "#/components/responses/Problem503"
          }
        }
      }
    },
    "/v1/ledger/head": {
      "get": {
        "operationId": "ledgerHead",
        "summary": "The last transaction's seq, hash and time, to note and check exports against later. Auditor and admin keys.",
        "responses": {
          "200": {
            "description": "The head.",
            "headers": {
              "X-Request-Id": {
                "$ref": "#/components/headers/RequestId"
              }
            },
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/LedgerHead"
                }
              }
            }
          },
          "401": {
            "$ref": "#/components/responses/Problem401"
          },
          "403": {
            "$ref": "#/components/responses/Problem403"
          },
          "500": {
            "$ref": "#/components/responses/Problem500"
          },
          "503": {
            "$ref": "#/components/responses/Problem503"
          }
        }
      }
    }
  },
  "components": {
    "securitySchemes": {
      "bearer": {
        "type": "http",
        "scheme": "bearer",
        "description": "An API key from `wallet keys create`, or a player's JWT signed with HS256 or ES256, as the server is configured (`sub` = player id, `exp` required)."
      }
    },
    "parameters": {
      "PlayerIdPath": {
        "name": "player_id",
        "in": "path",
        "required": true,
        "description": "The player's id.",
        "schema": {
          "$ref": "#/components/schemas/PlayerId"
        }
      },
      "IdempotencyKeyHeader": {
        "name": "Idempotency-Key",
        "in": "header",
        "required": false,
        "description": "Unique per mutation of this wallet; a retry with the same key and request answers the original result. May be sent as the body's `idempotency_key` instead.",
        "schema": {
          "$ref": "#/components/schemas/IdempotencyKey"
        }
      }
    },
    "headers": {
      "RequestId": {
        "description": "The client's X-Request-Id when it sent one (up to 128 visible ASCII characters), else a fresh id.",
        "required": true,
        "schema": {
          "type": "string"
        }
      },
      "IdempotentReplayed": {
        "description": "`true` when this answer is the original result of an earlier request with the same key.",
        "schema": {
          "type": "string",
          "enum": [
            "true"
          ]
        }
      }
    },
    "responses": {
      "Problem400": {
        "description": "The request is malformed or breaks a limit (`invalid_request`).",
        "headers": {
          "X-Request-Id": {
            "$ref": "#/components/headers/RequestId"
          }
        },
        "content": {
          "application/problem+json": {
            "schema": {
              "$ref": "#/components/schemas/Problem"
            }
          }
        }
      },
      "Problem401": {
        "description": "Missing, unknown, revoked or expired credentials (`unauthorized`).",
        "headers": {
          "X-Request-Id": {
            "$ref": "#/components/headers/RequestId"
          }
        },
        "content": {
          "application/problem+json": {
            "schema": {
              "$ref": "#/components/schemas/Problem"
            }
          }
        }
      },
      "Problem403": {
        "description": "The credentials may not call this route or act on this wallet (`forbidden`).",
        "headers": {
          "X-Request-Id": {
            "$ref": "#/components/headers/RequestId"
          }
        },
        "content": {
          "application/problem+json": {
            "schema": {
              "$ref": "#/components/schemas/Problem"
            }
          }
        }
      },
      "Problem404": {
        "description": "The purchase to refund does not exist (`not_found`).",
        "headers": {
          "X-Request-Id": {
            "$ref": "#/components/headers/RequestId"
          }
        },
        "content": {
          "application/problem+json": {
            "schema": {
              "$ref": "#/components/schemas/Problem"
            }
          }
        }
      },
      "Problem409": {
        "description": "`insufficient_funds`, `idempotency_key_reused` for a key already used by another request, or `already_refunded` for a refund share already reached.",
        "headers": {
          "X-Request-Id": {
            "$ref": "#/components/headers/RequestId"
          }
        },
        "content": {
          "application/problem+json": {
            "schema": {
              "$ref": "#/components/schemas/Problem"
            }
          }
        }
      },
      "Problem413": {
        "description": "The body is larger than 64 KiB (`payload_too_large`).",
        "headers": {
          "X-Request-Id": {
            "$ref": "#/components/headers/RequestId"
          }
        },
        "content": {
          "application/problem+json": {
            "schema": {
              "$ref": "#/components/schemas/Problem"
            }
          }
        }
      },
      "Problem415": {
        "description": "The body is not `application/json` (`unsupported_media_type`).",
        "headers": {
          "X-Request-Id": {
            "$ref": "#/components/headers/RequestId"
          }
        },
        "content": {
          "application/problem+json": {
            "schema": {
              "$ref": "#/components/schemas/Problem"
            }
          }
        }
      },
      "Problem422": {
        "description": "The product is unknown or inactive (`unknown_product`), the currency unknown (`unknown_currency`), or a signed purchase failed verification (`purchase_invalid`, the detail says why).",
        "headers": {
          "X-Request-Id": {
            "$ref": "#/components/headers/RequestId"
          }
        },
        "content": {
          "application/problem+json": {
            "schema": {
              "$ref": "#/components/schemas/Problem"
            }
          }
        }
      },
      "Problem501": {
        "description": "Apple purchases are not configured on this server (`not_configured`).",
        "headers": {
          "X-Request-Id": {
            "$ref": "#/components/headers/RequestId"
          }
        },
        "content": {
          "application/problem+json": {
            "schema": {
              "$ref": "#/components/schemas/Problem"
            }
          }
        }
      },
      "Problem500": {
        "description": "An unexpected error, logged with the request id (`internal_error`), or a stored ledger that breaks its own rules (`ledger_corrupt`: run `wallet verify`; retrying will not help).",
        "headers": {
          "X-Request-Id": {
            "$ref": "#/components/headers/RequestId"
          }
        },
        "content": {
          "application/problem+json": {
            "schema": {
              "$ref": "#/components/schemas/Problem"
            }
          }
        }
      },
      "Problem503": {
        "description": "The storage is busy or failing (`storage_error`), the write queue is full (`overloaded`), or a store's server API could not answer (`store_unavailable`); nothing was written and the request may be retried after `Retry-After` seconds.",
        "headers": {
          "X-Request-Id": {
            "$ref": "#/components/headers/RequestId"
          }
        },
        "content": {
          "application/problem+json": {
            "schema": {
              "$ref": "#/components/schemas/Problem"
            }
          }
        }
      }
    },
    "schemas": {
      "PlayerId": {
        "type": "string",
        "minLength": 1,
        "maxLength": 255,
        "pattern": "^[A-Za-z0-9._:@+=|~-]+$",
        "description": "1 to 255 bytes of ASCII letters, digits and - _ . : @ + = | ~, and not '.' or '..'. Nothing else: ids are compared by their bytes, so no two distinct ids can look alike."
      },
      "IdempotencyKey": {
        "type": "string",
        "minLength": 1,
        "maxLength": 255,
        "pattern": "^[\\x21-\\x7e]+$"
      },
      "ProductId": {
        "type": "string",
        "minLength": 1,
        "maxLength": 255,
        "pattern": "^[\\x21-\\x7e]+$"
      },
      "Currency": {
        "type": "string",
        "pattern": "^[a-z][a-z0-9_]{0,15}$",
        "default": "credits"
      },
      "Store": {
        "type": "string",
        "pattern": "^[a-z][a-z0-9_-]{0,31}$",
        "examples": [
          "apple",
          "google",
          "steam"
        ]
      },
      "TransactionKind": {
        "type": "string",
        "enum": [
          "purchase",
          "spend",
          "adjustment",
          "refund",
          "refund_reversal",
          "bonus",
          "expiry",
          "hold",
          "capture",
          "release"
        ]
      },
      "Status": {
        "type": "object",
        "required": [
          "status"
        ],
        "properties": {
          "status": {
            "type": "string"
          }
        },
        "additionalProperties": false
      },
      "Problem": {
        "type": "object",
        "required": [
          "type",
          "title",
          "status",
          "detail",
          "code"
        ],
        "additionalProperties": false,
        "properties": {
          "type": {
            "type": "string"
          },
          "title": {
            "type": "string"
          },
          "status": {
            "type": "integer"
          },
          "detail": {
            "type": "string"
          },
          "code": {
            "type": "string",
            "description": "Stable machine code: insufficient_funds, idempotency_key_reused, already_refunded, unknown_product, unknown_currency, invalid_request, unauthorized, forbidden, not_found, method_not_allowed, payload_too_large, unsupported_media_type, purchase_invalid, not_configured, store_unavailable, rate_limited, hold_captured, hold_released, hold_expired, capture_exceeds_hold, too_many_lots, storage_error, overloaded, ledger_corrupt, unsupported_database, internal_error."
          }
        }
      },
      "Posting": {
        "type": "object",
        "required": [
          "account",
          "currency",
          "amount",
          "balance_after"
        ],
        "additionalProperties": false,
        "properties": {
          "account": {
            "type": "string",
            "description": "`player:<id>` or a system account such as `@spend`."
          },
          "currency": {
            "$ref": "#/components/schemas/Currency"
          },
          "amount": {
            "type": "integer",
            "format": "int64"
          },
          "balance_after": {
            "type": "integer",
            "format": "int64"
          }
        }
      },
      "Transaction": {
        "type": "object",
        "description": "A ledger transaction. API keys (service, support, auditor, admin) get the whole record. A player token gets the player's view: no `actor`, `reason_code`, `ticket`, `prev_hash` or `hash`; `note` and `idempotency_key` only on a spend (its own reason and key); and only the player's own postings.",
        "additionalProperties": false,
        "required": [
          "seq",
          "id",
          "kind",
          "player_id",
          "currency",
          "amount",
          "created_at",
          "uncollected",
          "postings"
        ],
        "properties": {
          "seq": {
            "type": "integer",
            "format": "int64",
            "minimum": 1,
            "description": "Global, gap-free position in the ledger."
          },
          "id": {
            "type": "string",
            "format": "uuid"
          },
          "kind": {
            "$ref": "#/components/schemas/TransactionKind"
          },
          "player_id": {
            "type": "string"
          },
          "currency": {
            "$ref": "#/components/schemas/Currency"
          },
          "amount": {
            "type": "integer",
            "format": "int64",
            "description": "What moved into the player's wallet (negative: out of it)."
          },
          "actor": {
            "type": "string",
            "description": "The API key id or `player:<id>` that asked for it. Not shown to players."
          },
          "created_at": {
            "type": "string",
            "format": "date-time"
          },
          "idempotency_key": {
            "type": "string"
          },
          "store": {
            "type": "string"
          },
          "store_transaction_id": {
            "type": "string"
          },
          "product_id": {
            "type": "string"
          },
          "quantity": {
            "type": "integer",
            "format": "int64"
          },
          "reason_code": {
            "type": "string"
          },
          "note": {
            "type": "string",
            "description": "Support's note on an adjustment (not shown to players), or a spend's `reason`."
          },
          "ticket": {
            "type": "string",
            "description": "Support's ticket reference. Not shown to players."
          },
          "refund_of_seq": {
            "type": "integer",
            "format": "int64"
          },
          "uncollected": {
            "type": "integer",
            "format": "int64",
            "minimum": 0,
            "description": "What a `floor` refund could not take back."
          },
          "metadata": {
            "type": "object"
          },
          "prev_hash": {
            "type": "string",
            "pattern": "^[0-9a-f]{64}$"
          },
          "hash": {
            "type": "string",
            "pattern": "^[0-9a-f]{64}$"
          },
          "postings": {
            "type": "array",
            "description": "Every leg for API keys (at least two); the player's own leg for a player token.",
            "minItems": 1,
            "items": {
              "$ref": "#/components/schemas/Posting"
            }
          }
        }
      },
      "MutationResponse": {
        "type": "object",
        "required": [
          "transaction",
          "balance"
        ],
        "additionalProperties": false,
        "properties": {
          "transaction": {
            "$ref": "#/components/schemas/Transaction"
          },
          "balance": {
            "type": "integer",
            "format": "int64",
            "description": "The player's balance in the transaction's currency right after it."
          }
        }
      },
      "WalletBalances": {
        "type": "object",
        "required": [
          "player_id",
          "balances",
          "expiring_within_7_days",
          "held"
        ],
        "additionalProperties": false,
        "properties": {
          "player_id": {
            "type": "string"
          },
          "balances": {
            "type": "object",
            "description": "Per currency, what a debit can use now: credits of lots past their expiry are not counted, credits of holds past theirs are, even before the expiry sweep books them. Negative while a refund's debt is unpaid.",
            "additionalProperties": {
              "type": "integer",
              "format": "int64"
            }
          },
          "held": {
            "type": "object",
            "description": "Per currency, what open holds not yet expired reserve (already out of `balances`, which is what can be spent).",
            "additionalProperties": {
              "type": "integer",
              "format": "int64"
            }
          },
          "expiring_within_7_days": {
            "type": "object",
            "description": "Per currency, what bonus lots take away in the next 7 days unless spent (currencies with nothing expiring left out).",
            "additionalProperties": {
              "type": "integer",
              "format": "int64"
            }
          }
        }
      },
      "HistoryPage": {
        "type": "object",
        "required": [
          "transactions"
        ],
        "additionalProperties": false,
        "properties": {
          "transactions": {
            "type": "array",
            "items": {
              "$ref": "#/components/schemas/Transaction"
            }
          },
          "next": {
            "type": "integer",
            "format": "int64",
            "description": "Pass as `after` for the next page; absent on the last page."
          }
        }
      },
      "VerifyReport": {
        "type": "object",
        "required": [
          "ok",
          "transactions",
          "head_hash",
          "first_bad_seq"
        ],
        "additionalProperties": false,
        "properties": {
          "ok": {
            "type": "boolean"
          },
          "transactions": {
            "type": "integer",
            "format": "int64"
          },
          "head_hash": {
            "type": "string",
            "pattern": "^[0-9a-f]{64}$"
          },
          "first_bad_seq": {
            "type": [
              "integer",
              "null"
            ],
            "format": "int64"
          },
          "problem": {
            "type": "string",
            "description": "What is wrong at first_bad_seq."
          }
        }
      },
      "LedgerHead": {
        "type": "object",
        "required": [
          "seq",
          "hash",
          "at"
        ],
        "additionalProperties": false,
        "properties": {
          "seq": {
            "type": "integer",
            "format": "int64",
            "minimum": 0
          },
          "hash": {
            "type": "string",
            "pattern": "^[0-9a-f]{64}$"
          },
          "at": {
            "type": [
              "string",
              "null"
            ],
            "format": "date-time"
          }
        }
      },
      "Statement": {
        "type": "object",
        "required": [
          "player_id",
          "from",
          "to",
          "currencies"
        ],
        "additionalProperties": false,
        "properties": {
          "player_id": {
            "type": "string"
          },
          "from": {
            "type": [
              "string",
              "null"
            ],
            "format": "date-time"
          },
          "to": {
            "type": [
              "string",
              "null"
            ],
            "format": "date-time"
          },
          "currencies": {
            "type": "array",
            "items": {
              "type": "object",
              "additionalProperties": false,
              "required": [
                "currency",
                "opening_balance",
                "closing_balance",
                "transactions"
              ],
              "properties": {
                "currency": {
                  "$ref": "#/components/schemas/Currency"
                },
                "opening_balance": {
                  "type": "integer",
                  "format": "int64"
                },
                "closing_balance": {
                  "type": "integer",
                  "format": "int64"
                },
                "transactions": {
                  "type": "array",
                  "items": {
                    "$ref": "#/components/schemas/Transaction"
                  }
                }
              }
            }
          }
        }
      },
      "Product": {
        "type": "object",
        "required": [
          "product_id",
          "currency",
          "credits",
          "active",
          "updated_at"
        ],
        "additionalProperties": false,
        "properties": {
          "product_id": {
            "type": "string"
          },
          "currency": {
            "$ref": "#/components/schemas/Currency"
          },
          "credits": {
            "type": "integer",
            "format": "int64"
          },
          "store": {
            "$ref": "#/components/schemas/Store"
          },
          "active": {
            "type": "boolean"
          },
          "updated_at": {
            "type": "string",
            "format": "date-time"
          }
        }
      },
      "ProductList": {
        "type": "object",
        "required": [
          "products"
        ],
        "additionalProperties": false,
        "properties": {
          "products": {
            "type": "array",
            "items": {
              "$ref": "#/components/schemas/Product"
            }
          }
        }
      },
      "ProductBody": {
        "type": "object",
        "required": [
          "credits"
        ],
        "additionalProperties": false,
        "properties": {
          "credits": {
            "type": "integer",
            "format": "int64",
            "minimum": 1,
            "maximum": 1000000000
          },
          "currency": {
            "$ref": "#/components/schemas/Currency"
          },
          "store": {
            "$ref": "#/components/schemas/Store",
            "description": "Only grants from this store may use the product."
          },
          "active": {
            "type": "boolean",
            "default": true
          }
        }
      },
      "PurchaseBody": {
        "type": "object",
        "required": [
          "player_id",
          "store",
          "store_transaction_id",
          "product_id"
        ],
        "additionalProperties": false,
        "properties": {
          "player_id": {
            "$ref": "#/components/schemas/PlayerId"
          },
          "store": {
            "$ref": "#/components/schemas/Store"
          },
          "store_transaction_id": {
            "$ref": "#/components/schemas/IdempotencyKey",
            "description": "The store's transaction id: the idempotency key, global and permanent."
          },
          "product_id": {
            "$ref": "#/components/schemas/ProductId"
          },
          "quantity": {
            "type": "integer",
            "format": "int64",
            "minimum": 1,
            "maximum": 100,
            "default": 1
          }
        }
      },
      "ApplePurchaseBody": {
        "type": "object",
        "required": [
          "player_id",
          "signed_transaction"
        ],
        "additionalProperties": false,
        "properties": {
          "player_id": {
            "$ref": "#/components/schemas/PlayerId"
          },
          "signed_transaction": {
            "type": "string",
            "minLength": 1,
            "maxLength": 16384,
            "description": "StoreKit 2 `Transaction.jwsRepresentation` (the `signedTransactionInfo` JWS)."
          }
        }
      },
      "AppleReceiptBody": {
        "type": "object",
        "required": [
          "player_id",
          "receipt"
        ],
        "additionalProperties": false,
        "properties": {
          "player_id": {
            "$ref": "#/components/schemas/PlayerId"
          },
          "receipt": {
            "type": "string",
            "minLength": 1,
            "maxLength": 1049600,
            "description": "The base64 app receipt (`Bundle.main.appStoreReceiptURL`), or Unity IAP's receipt JSON `{\"Store\", \"TransactionID\", \"Payload\"}` as text."
          }
        }
      },
      "CreditOrderBody": {
        "type": "object",
        "required": [
          "player_id"
        ],
        "additionalProperties": false,
        "properties": {
          "player_id": {
            "$ref": "#/components/schemas/PlayerId"
          }
        }
      },
      "StoreTransactionCredit": {
        "type": "object",
        "required": [
          "store_transaction_id",
          "product_id",
          "quantity",
          "player_id",
          "amount",
          "currency",
          "seq",
          "created_at"
        ],
        "properties": {
          "store_transaction_id": {
            "type": "string"
          },
          "product_id": {
            "type": "string"
          },
          "quantity": {
            "type": "integer",
            "format": "int64"
          },
          "player_id": {
            "type": "string",
            "description": "Who was credited."
          },
          "amount": {
            "type": "integer",
            "format": "int64"
          },
          "currency": {
            "type": "string"
          },
          "seq": {
            "type": "integer",
            "format": "int64"
          },
          "created_at": {
            "type": "string",
            "format": "date-time"
          }
        }
      },
      "StoreTransactionRefusal": {
        "type": "object",
        "required": [
          "code",
          "detail"
        ],
        "properties": {
          "store_transaction_id": {
            "type": "string",
            "description": "Absent when the transaction's signature did not verify."
          },
          "code": {
            "type": "string",
            "description": "A problem code (`purchase_invalid`, `unknown_product`, ...) or `already_credited_elsewhere`."
          },
          "detail": {
            "type": "string"
          }
        }
      },
      "ReceiptRedemption": {
        "type": "object",
        "required": [
          "player_id",
          "environment",
          "credited",
          "already_credited",
          "refused",
          "complete"
        ],
        "properties": {
          "player_id": {
            "type": "string"
          },
          "environment": {
            "type": "string",
            "enum": [
              "Production",
              "Sandbox"
            ]
          },
          "credited": {
            "type": "array",
            "items": {
              "$ref": "#/components/schemas/StoreTransactionCredit"
            },
            "description": "Credited by this request."
          },
          "already_credited": {
            "type": "array",
            "items": {
              "$ref": "#/components/schemas/StoreTransactionCredit"
            },
            "description": "Credited to this player before."
          },
          "refused": {
            "type": "array",
            "items": {
              "$ref": "#/components/schemas/StoreTransactionRefusal"
            }
          },
          "complete": {
            "type": "boolean",
            "description": "Always true: a history the wallet would have to read past 50 pages to find every purchase the receipt names is refused with 503 rather than read in part. Kept for compatibility."
          }
        }
      },
      "OrderLookup": {
        "type": "object",
        "required": [
          "order_id",
          "transactions"
        ],
        "properties": {
          "order_id": {
            "type": "string"
          },
          "transactions": {
            "type": "array",
            "items": {
              "type": "object",
              "required": [
                "status"
              ],
              "properties": {
                "store_transaction_id": {
                  "type": "string"
                },
                "product_id": {
                  "type": "string"
                },
                "status": {
                  "type": "string",
                  "enum": [
                    "credited",
                    "credited_now",
                    "not_credited",
                    "refused"
                  ]
                },
                "credit": {
                  "$ref": "#/components/schemas/StoreTransactionCredit"
                },
                "refusal": {
                  "$ref": "#/components/schemas/StoreTransactionRefusal"
                }
              }
            }
          }
        }
      },
      "APIKey": {
        "type": "object",
        "required": [
          "id",
          "name",
          "role",
          "created_at"
        ],
        "properties": {
          "id": {
            "type": "string"
          },
          "name": {
            "type": "string"
          },
          "role": {
            "type": "string",
            "enum": [
              "admin",
              "service",
              "support",
              "auditor"
            ]
          },
          "created_at": {
            "type": "string",
            "format": "date-time"
          },
          "revoked_at": {
            "type": "string",
            "format": "date-time"
          }
        }
      },
      "APIKeyList": {
        "type": "object",
        "required": [
          "keys"
        ],
        "properties": {
          "keys": {
            "type": "array",
            "items": {
              "$ref": "#/components/schemas/APIKey"
            }
          }
        }
      },
      "CreatedAPIKey": {
        "type": "object",
        "required": [
          "key",
          "secret"
        ],
        "properties": {
          "key": {
            "$ref": "#/components/schemas/APIKey"
          },
          "secret": {
            "type": "string",
            "description": "Shown this once."
          }
        }
      },
      "KeyBody": {
        "type": "object",
        "required": [
          "role",
          "name"
        ],
        "additionalProperties": false,
        "properties": {
          "role": {
            "type": "string",
            "enum": [
              "admin",
              "service",
              "support",
              "auditor"
            ]
          },
          "name": {
            "type": "string",
            "minLength": 1,
            "maxLength": 255,
            "description": "A label for people: which backend or person holds the key."
          }
        }
      },
      "ExportLinkBody": {
        "type": "object",
        "additionalProperties": false,
        "properties": {
          "from": {
            "type": "string",
            "format": "date-time"
          },
          "to": {
            "type": "string",
            "format": "date-time"
          },
          "player": {
            "$ref": "#/components/schemas/PlayerId"
          },
          "currency": {
            "type": "string",
            "minLength": 1,
            "maxLength": 16
          },
          "format": {
            "type": "string",
            "enum": [
              "csv",
              "jsonl"
            ]
          }
        }
      },
      "BonusBody": {
        "type": "object",
        "required": [
          "amount",
          "reason_code"
        ],
        "additionalProperties": false,
        "properties": {
          "amount": {
            "type": "integer",
            "minimum": 1,
            "maximum": 1000000000
          },
          "currency": {
            "type": "string",
            "minLength": 1,
            "maxLength": 16
          },
          "expires_at": {
            "type": "string",
            "format": "date-time",
            "description": "When what is left of it expires; in the future. Absent: never."
          },
          "reason_code": {
            "type": "string",
            "minLength": 1,
            "maxLength": 64
          },
          "note": {
            "type": "string",
            "maxLength": 2000
          },
          "campaign": {
            "type": "string",
            "minLength": 1,
            "maxLength": 255
          },
          "idempotency_key": {
            "type": "string",
            "minLength": 1,
            "maxLength": 255
          }
        }
      },
      "Hold": {
        "type": "object",
        "required": [
          "id",
          "player_id",
          "currency",
          "amount",
          "status",
          "expires_at",
          "hold_seq"
        ],
        "properties": {
          "id": {
            "type": "string"
          },
          "player_id": {
            "type": "string"
          },
          "currency": {
            "type": "string"
          },
          "amount": {
            "type": "integer"
          },
          "status": {
            "type": "string",
            "enum": [
              "open",
              "captured",
              "released",
              "expired"
            ]
          },
          "expires_at": {
            "type": "string",
            "format": "date-time"
          },
          "hold_seq": {
            "type": "integer"
          },
          "resolved_seq": {
            "type": "integer"
          },
          "captured": {
            "type": "integer"
          }
        }
      },
      "HoldResult": {
        "type": "object",
        "required": [
          "hold",
          "transaction",
          "balance"
        ],
        "properties": {
          "hold": {
            "$ref": "#/components/schemas/Hold"
          },
          "transaction": {
            "type": "object"
          },
          "balance": {
            "type": "integer"
          }
        }
      },
      "HoldBody": {
        "type": "object",
        "required": [
          "amount",
          "expires_in_seconds"
        ],
        "additionalProperties": false,
        "properties": {
          "amount": {
            "type": "integer",
            "minimum": 1,
            "maximum": 1000000000
          },
          "currency": {
            "type": "string",
            "minLength": 1,
            "maxLength": 16
          },
          "expires_in_seconds": {
            "type": "integer",
            "minimum": 1,
            "maximum": 604800
          },
          "reason": {
            "type": "string",
            "maxLength": 255
          },
          "metadata": {
            "type": "object"
          },
          "idempotency_key": {
            "type": "string",
            "minLength": 1,
            "maxLength": 255
          }
        }
      },
      "CaptureBody": {
        "type": "object",
        "additionalProperties": false,
        "properties": {
          "amount": {
            "type": "integer",
            "minimum": 1,
            "maximum": 1000000000
          },
          "idempotency_key": {
            "type": "string",
            "minLength": 1,
            "maxLength": 255
          }
        }
      },
      "ReleaseBody": {
        "type": "object",
        "additionalProperties": false,
        "properties": {
          "idempotency_key": {
            "type": "string",
            "minLength": 1,
            "maxLength": 255
          }
        }
      },
      "AppleNotificationBody": {
        "type": "object",
        "required": [
          "signedPayload"
        ],
        "additionalProperties": false,
        "properties": {
          "signedPayload": {
            "type": "string",
            "minLength": 1,
            "maxLength": 16384
          }
        }
      },
      "NotificationOutcome": {
        "type": "object",
        "required": [
          "notification_uuid",
          "notification_type",
          "outcome",
          "replayed"
        ],
        "additionalProperties": false,
        "properties": {
          "notification_uuid": {
            "type": "string"
          },
          "notification_type": {
            "type": "string"
          },
          "outcome": {
            "type": "string",
            "enum": [
              "refunded",
              "refund_reversed",
              "consumption_recorded",
              "no_purchase",
              "no_refund",
              "already_applied",
              "superseded",
              "invalid",
              "recorded"
            ]
          },
          "ledger_seq": {
            "type": "integer",
            "format": "int64"
          },
          "spent_share_millipercent": {
            "type": "integer",
            "minimum": 0,
            "maximum": 100000
          },
          "replayed": {
            "type": "boolean"
          }
        }
      },
      "RefundBody": {
        "type": "object",
        "required": [
          "store",
          "store_transaction_id"
        ],
        "additionalProperties": false,
        "properties": {
          "store": {
            "$ref": "#/components/schemas/Store"
          },
          "store_transaction_id": {
            "$ref": "#/components/schemas/IdempotencyKey"
          },
          "percentage": {
            "type": "integer",
            "format": "int64",
            "minimum": 1,
            "maximum": 100,
            "default": 100
          },
          "policy": {
            "type": "string",
            "enum": [
              "debt",
              "floor"
            ],
            "default": "debt",
            "description": "debt: the balance may go negative and spending waits until it is repaid; floor: stop at zero and record the rest as uncollected."
          }
        }
      },
      "SpendBody": {
        "type": "object",
        "required": [
          "amount"
        ],
        "additionalProperties": false,
        "properties": {
          "amount": {
            "type": "integer",
            "format": "int64",
            "minimum": 1,
            "maximum": 1000000000
          },
          "currency": {
            "$ref": "#/components/schemas/Currency"
          },
          "reason": {
            "type": "string",
            "minLength": 1,
            "maxLength": 255
          },
          "metadata": {
            "type": "object",
            "description": "Stored with the transaction and returned exactly as sent: at most 4096 bytes of JSON and 63 levels deep; numbers are 64-bit integers or fractions in shortest form (-0, 1.0 or 1e3 are refused)."
          },
          "idempotency_key": {
            "$ref": "#/components/schemas/IdempotencyKey"
          }
        }
      },
      "AdjustmentBody": {
        "type": "object",
        "required": [
          "amount",
          "reason_code",
          "note"
        ],
        "additionalProperties": false,
        "properties": {
          "amount": {
            "type": "integer",
            "format": "int64",
            "minimum": -1000000000,
            "maximum": 1000000000,
            "not": {
              "const": 0
            }
          },
          "reason_code": {
            "type": "string",
            "pattern": "^[a-z][a-z0-9_]{0,63}$"
          },
          "note": {
            "type": "string",
            "minLength": 1,
            "maxLength": 2000
          },
          "ticket": {
            "type": "string",
            "minLength": 1,
            "maxLength": 255
          },
          "currency": {
            "$ref": "#/components/schemas/Currency"
          },
          "allow_negative": {
            "type": "boolean",
            "default": false
          },
          "idempotency_key": {
            "$ref": "#/components/schemas/IdempotencyKey"
          }
        }
      }
    }
  }
}
"""#
}
