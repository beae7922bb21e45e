// bizmsg dashboard: the copy buttons. Everything else works without script.
"use strict";
document.addEventListener("click", function (event) {
  var button = event.target.closest("button[data-copy]");
  if (!button) return;
  var id = button.getAttribute("data-copy");
  var source = document.getElementById(id);
  var status = document.getElementById(id + "-status");
  if (!source) return;
  var text = source.value !== undefined ? source.value : source.textContent;
  var done = function (ok) {
    if (status) status.textContent = ok ? "Copied to the clipboard." : "Copy failed: select the text and copy it by hand.";
  };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(function () { done(true); }, function () { done(fallback(source)); });
  } else {
    done(fallback(source));
  }
});

function fallback(source) {
  try {
    if (source.select) {
      source.select();
    } else {
      var range = document.createRange();
      range.selectNodeContents(source);
      var selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
    }
    return document.execCommand("copy");
  } catch (e) {
    return false;
  }
}
