"""Number formats of our own where Django's differ from what readers expect (FORMAT_MODULE_PATH)."""
