"""What the make-goldens*.py scripts of every flodl package share.

The scripts import this module by path (it needs nothing but the standard library):

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'testing', 'python'))
    import flodl_goldens

One encoding for every fixture: JSON has no NaN or Infinity, so a non-finite number is written
as the string 'nan', 'inf' or '-inf' (@flodl/testing's readFixture and decodeNumber read them
back). Fixtures are written with allow_nan=False, so a non-finite number that escaped encoding
stops the script instead of writing a file JSON.parse refuses.
"""

import json
import math
import os


def encode_number(value):
    """A number as the fixtures store it: non-finite floats become 'nan', 'inf' or '-inf'."""
    if isinstance(value, float):
        if math.isnan(value):
            return 'nan'
        if math.isinf(value):
            return 'inf' if value > 0 else '-inf'
    return value


def encode_data(payload):
    """The payload with every number of every `data` list encoded (tensors' values)."""
    if isinstance(payload, dict):
        return {key: [encode_number(item) for item in value] if key == 'data' and isinstance(value, list)
                else encode_data(value) for key, value in payload.items()}
    if isinstance(payload, list):
        return [encode_data(item) for item in payload]
    return payload


def dtype_name(dtype):
    """flodl's name of a torch dtype: torch.float32 -> 'float32'."""
    return str(dtype).replace('torch.', '')


def fixtures_dir(script):
    """The test/fixtures folder of the package whose scripts/ folder holds `script` (pass __file__)."""
    return os.path.join(os.path.dirname(os.path.abspath(script)), '..', 'test', 'fixtures')


def write_json(path, payload, compact=False):
    """Writes `payload` as JSON (compact: no spaces after separators) and refuses NaN or Infinity."""
    with open(path, 'w') as handle:
        json.dump(payload, handle, separators=(',', ':') if compact else None, allow_nan=False)
