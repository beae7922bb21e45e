// bizmsg dashboard: the copy buttons, the template editor's example
// fields and live preview, and the address of a page that answers a form.
// Everything works without script.
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

// The template editor (/templates/new): one example field per variable of
// the header and body, added and removed as they are typed, and a preview
// of the message as the platform renders it (docs/api.md, §Templates):
// header, body and footer, trimmed, joined by blank lines, each variable
// replaced by its example. Variables without an example stay marked.
var templateForm = document.getElementById("template-form");
if (templateForm) templateEditor(templateForm);

function templateEditor(form) {
  var variableRE = /\{\{([1-9][0-9]*|[a-z_]+)\}\}/g;
  var header = document.getElementById("t-header");
  var body = document.getElementById("t-body");
  var footer = document.getElementById("t-footer");
  var box = document.getElementById("t-examples");
  var none = document.getElementById("no-examples");
  var preview = document.getElementById("preview");
  var out = document.getElementById("preview-text");
  var prefix = "examples.";
  // Values of example fields taken away, in case their variable returns.
  var kept = {};

  // variables lists those of the header and body: numbers in order, then
  // names in order of first use (the service's order).
  function variables() {
    var numbers = [], names = [];
    (header.value + "\n" + body.value).replace(variableRE, function (all, name) {
      var list = /^[0-9]/.test(name) ? numbers : names;
      if (list.indexOf(name) < 0) list.push(name);
      return all;
    });
    numbers.sort(function (a, b) { return a - b; });
    return numbers.concat(names);
  }

  function exampleInputs() {
    return Array.prototype.slice.call(box.querySelectorAll("input[name^='" + prefix + "']"));
  }

  // makeField builds the field the server renders for a variable.
  function makeField(name) {
    var field = document.createElement("div");
    field.className = "field";
    var label = document.createElement("label");
    label.htmlFor = "ex-" + name;
    label.textContent = "Example for {{" + name + "}}";
    var input = document.createElement("input");
    input.id = "ex-" + name;
    input.name = prefix + name;
    input.autocomplete = "off";
    input.required = true;
    input.maxLength = Number(box.getAttribute("data-max")) || 1024;
    input.value = kept[name] || "";
    field.appendChild(label);
    field.appendChild(input);
    return field;
  }

  function syncExamples() {
    var vars = variables();
    exampleInputs().forEach(function (input) {
      var name = input.name.slice(prefix.length);
      if (vars.indexOf(name) < 0) {
        kept[name] = input.value;
        input.closest(".field").remove();
      }
    });
    var names = function () {
      return exampleInputs().map(function (input) { return input.name.slice(prefix.length); });
    };
    var current = names();
    vars.forEach(function (name) {
      if (current.indexOf(name) < 0) box.appendChild(makeField(name));
    });
    if (names().join(" ") !== vars.join(" ")) {
      vars.forEach(function (name) { box.appendChild(document.getElementById("ex-" + name).closest(".field")); });
    }
    none.hidden = vars.length > 0;
  }

  function renderPreview() {
    var values = {};
    exampleInputs().forEach(function (input) { values[input.name.slice(prefix.length)] = input.value; });
    var parts = [header.value, body.value, footer.value]
      .map(function (text) { return text.trim(); })
      .filter(function (text) { return text !== ""; });
    out.textContent = "";
    if (parts.length === 0) {
      out.textContent = "Type a body to see the message.";
      return;
    }
    parts.forEach(function (text, i) {
      if (i > 0) out.appendChild(document.createTextNode("\n\n"));
      var last = 0, re = new RegExp(variableRE.source, "g"), m;
      while ((m = re.exec(text)) !== null) {
        out.appendChild(document.createTextNode(text.slice(last, m.index)));
        var value = values[m[1]];
        if (value && value.trim() !== "") {
          out.appendChild(document.createTextNode(value));
        } else {
          var mark = document.createElement("mark");
          mark.textContent = m[0];
          out.appendChild(mark);
        }
        last = re.lastIndex;
      }
      out.appendChild(document.createTextNode(text.slice(last)));
    });
  }

  form.addEventListener("input", function (event) {
    if (event.target === header || event.target === body) syncExamples();
    renderPreview();
  });
  syncExamples();
  renderPreview();
  preview.hidden = false;
}

// A page that answers a form's POST (a campaign's page after adding
// recipients) names its own address: show it, so that reloading the page
// reads it again instead of posting the form a second time.
var answered = document.querySelector("[data-address]");
if (answered && window.history && history.replaceState) {
  history.replaceState(null, "", answered.getAttribute("data-address"));
}
